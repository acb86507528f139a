import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Enrolment: the gateway advertises as a connectable heart-rate sensor a phone's Bluetooth settings will pair
/// with, accepts one LE Secure Connections pairing, takes the phone's IRK and identity address from key
/// distribution, ends the link and stops advertising. Exclusive mode: our own host owns the controller.
public struct Enrolment: Sendable {
    public struct Options: Sendable {
        /// The Complete Local Name the phone lists.
        public var name = "BLEGateway"
        /// How long to advertise and wait for a pairing to finish.
        public var timeout = Duration.seconds(120)
        public init() {}
    }

    /// What the operator sees while it runs.
    public enum Progress: Sendable, Hashable {
        case advertising(BDAddress, name: String)
        case connected(BDAddress)
        /// Passkey Entry: the phone's user types this number.
        case passkey(UInt32)
        case paired(SMPPairingResponder.PeerIdentity)
    }

    public struct Failed: Error, CustomStringConvertible, Sendable, Hashable {
        public enum Reason: Sendable, Hashable {
            case pairing(SMPPairingResponder.Failure)
            /// The phone ended the link before the pairing finished.
            case linkLost
            /// Nobody paired within the timeout.
            case timedOut(Duration)
            /// A running gateway cannot enrol now: no controller session of its own (shared mode, an adapter down).
            case unavailable(String)
        }
        public var reason: Reason
        public var description: String {
            switch reason {
            case .pairing(let f): "pairing failed: \(f)"
            case .linkLost: "the phone ended the link before the pairing finished"
            case .timedOut(let d): "no phone paired within \(d.seconds) s"
            case .unavailable(let why): "enrolment is not possible now: \(why)"
            }
        }
    }

    /// Generic Heart Rate Sensor (Assigned Numbers §2.6.2, category 0x00D, subcategory 0x00): what a phone shows
    /// and pairs with from its Bluetooth settings.
    static let appearance: UInt16 = 0x0340
    /// Heart Rate service (Assigned Numbers §3.4.2).
    static let heartRateService: UInt16 = 0x180D
    /// Advertising interval 100 ms (0.625 ms units): found within a second by a phone's settings page.
    static let interval: UInt16 = 0x00A0
    /// Advertising_Type 0x00 ADV_IND: connectable and scannable undirected.
    static let connectableUndirected: UInt8 = 0x00

    public let options: Options
    let clock: any BLEClock
    let logger: Logger

    public init(options: Options = Options(), clock: any BLEClock = SystemClock(), logger: Logger) {
        self.options = options
        self.clock = clock
        self.logger = logger
    }

    /// Advertising data (Core Supplement, Part A): Flags LE General Discoverable | BR/EDR Not Supported,
    /// Appearance, the Heart Rate service UUID, and the name, shortened if the 31 octets run out.
    /// - Parameter flags: false leaves the Flags structure out, for the kernel to add (shared mode).
    public static func advertisingData(name: String, flags: Bool = true) -> [UInt8] {
        var d: [UInt8] = flags ? [0x02, 0x01, 0x06] : []
        d += [0x03, 0x19, UInt8(appearance & 0xFF), UInt8(appearance >> 8)]
        d += [0x03, 0x03, UInt8(heartRateService & 0xFF), UInt8(heartRateService >> 8)]
        // Room for the Flags the kernel adds when this function leaves them out.
        let room = 31 - (flags ? d.count : d.count + 3) - 2
        let bytes = Array(name.utf8)
        // 0x09 Complete Local Name, or 0x08 Shortened Local Name when it does not fit.
        d += [UInt8(min(bytes.count, room) + 1), bytes.count <= room ? 0x09 : 0x08] + bytes.prefix(room)
        return d
    }

    /// Runs one enrolment on `transport`, a controller of its own (the gateway stopped). `confirm` is asked when the
    /// phone shows six digits (Numeric Comparison); `progress` hears each step. Returns the phone's identity, or
    /// throws `Failed`.
    public func run(
        transport: any HCITransport, confirm: @escaping @Sendable (UInt32) async -> Bool,
        progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> SMPPairingResponder.PeerIdentity {
        let controller = HCIController(transport: transport, clock: clock)
        return try await withThrowingTaskGroup(of: SMPPairingResponder.PeerIdentity?.self) { group in
            group.addTask {
                try await controller.run()
                return nil
            }
            let info = try await ControllerBringUp.run(controller, logger: logger)
            let links = LELinks(controller: controller, buffers: info.leACLBuffers, clock: clock, logger: logger)
            group.addTask {
                await links.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await run(controller: controller, links: links, info: info, confirm: confirm, progress: progress)
        }
    }

    /// Runs one enrolment on a controller session that is already up (a running gateway's, beside its scanning and
    /// its links), through that session's `links`. Whatever the outcome (a timeout and cancellation too), pairing is
    /// no longer offered, the advertising is off and the phone's link is ended before it returns.
    public func run(
        controller: HCIController, links: LELinks, info: ControllerInfo,
        confirm: @escaping @Sendable (UInt32) async -> Bool, progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> SMPPairingResponder.PeerIdentity {
        // A controller with the extended commands is driven with them (legacy PDUs): some controllers deliver legacy
        // advertising only to legacy scanners, and a phone's stack scans with the extended commands. A gateway
        // scanning with the extended commands could not use the legacy ones anyway (Vol 4, Part E, §3.1.1).
        let extended = info.supportedCommands?.leExtendedAdvertising ?? false
        let reports = links.acceptPairing(
            PeripheralPairings.Offer(
                local: SMPPairingResponder.Party(type: .public, address: info.address), name: options.name,
                appearance: Self.appearance))
        let open = Locked<UInt16?>(nil)
        let outcome: Result<SMPPairingResponder.PeerIdentity, any Error>
        do {
            let identity = try await withThrowingTaskGroup(of: SMPPairingResponder.PeerIdentity.self) { group in
                group.addTask { [clock, options] in
                    try await clock.sleep(for: options.timeout)
                    throw Failed(reason: .timedOut(options.timeout))
                }
                group.addTask {
                    try await self.advertise(on: controller, extended: extended, true)
                    progress(.advertising(info.address, name: self.options.name))
                    return try await self.pair(
                        links: links, reports: reports, open: open, confirm: confirm, progress: progress)
                }
                defer { group.cancelAll() }
                guard let identity = try await group.next() else { throw Failed(reason: .linkLost) }
                return identity
            }
            outcome = .success(identity)
        } catch {
            outcome = .failure(error)
        }
        // Undone in a task of its own: when the caller was cancelled, these commands must still go out.
        await Task { [self] in
            links.stopAcceptingPairing()
            if let handle = open.withLock({ $0 }) { links.disconnect(handle: handle) }
            // Legacy PDUs stop with a connection; disabling again is harmless and covers no connection at all.
            do {
                try await advertise(on: controller, extended: extended, false)
            } catch {
                logger.error("enrol: could not stop advertising: \(error)")
            }
        }.value
        let identity = try outcome.get()
        progress(.paired(identity))
        return identity
    }

    private func pair(
        links: LELinks, reports: AsyncStream<PairingEvent>, open: Locked<UInt16?>,
        confirm: @escaping @Sendable (UInt32) async -> Bool, progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> SMPPairingResponder.PeerIdentity {
        var outcome: Result<SMPPairingResponder.PeerIdentity, Failed>?
        for await event in reports {
            switch event {
            case .connected(let handle, let peer):
                open.withLock { $0 = handle }
                logger.info("enrol: \(peer.address) connected")
                progress(.connected(peer.address))
            case .compare(let handle, let digits):
                let yes = await confirm(digits)
                links.confirmPairing(handle: handle, yes)
            case .passkey(_, let passkey):
                progress(.passkey(passkey))
            case .paired(let handle, let identity):
                outcome = .success(identity)
                // Only the name and address are logged: the IRK is a secret.
                logger.info("enrol: paired with \(identity.address)")
                links.disconnect(handle: handle)
            case .failed(let handle, let failure):
                outcome = .failure(Failed(reason: .pairing(failure)))
                logger.info("enrol: \(failure)")
                links.disconnect(handle: handle)
            case .disconnected(let handle) where handle == open.withLock({ $0 }):
                open.withLock { $0 = nil }
                if outcome == nil { outcome = .failure(Failed(reason: .linkLost)) }
            case .disconnected:
                break
            }
            // Done once there is an outcome and the link is gone: the Disconnect went out before the host stops.
            if let outcome, open.withLock({ $0 }) == nil { return try outcome.get() }
        }
        throw Failed(reason: .linkLost)
    }

    /// Connectable undirected advertising (ADV_IND) with the enrolment data, on or off.
    private func advertise(on controller: HCIController, extended: Bool, _ on: Bool) async throws {
        let data = Self.advertisingData(name: options.name)
        if extended {
            if on {
                _ = try await controller.execute(
                    LESetExtendedAdvertisingParametersCommand(
                        properties: .legacyConnectableScannable, intervalMin: UInt32(Self.interval),
                        intervalMax: UInt32(Self.interval)))
                _ = try await controller.execute(LESetExtendedAdvertisingDataCommand(data))
            }
            _ = try await controller.execute(LESetExtendedAdvertisingEnableCommand(enable: on))
        } else {
            if on {
                _ = try await controller.execute(
                    LESetAdvertisingParametersCommand(
                        intervalMin: Self.interval, intervalMax: Self.interval,
                        advertisingType: Self.connectableUndirected))
                _ = try await controller.execute(LESetAdvertisingDataCommand(data))
            }
            _ = try await controller.execute(LESetAdvertisingEnableCommand(enable: on))
        }
    }
}
