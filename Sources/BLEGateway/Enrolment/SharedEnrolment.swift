import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Enrolment in shared mode: bluetoothd owns the adapter, so the kernel's Security Manager answers the phone, and
/// bluetoothd's agent (bluetoothctl with `agent on`) asks the user to confirm the six digits. The gateway only asks
/// the kernel to advertise (management Add Advertising, connectable, in an instance of its own beside bluetoothd's)
/// and reads the key the pairing distributes: the kernel announces it once, as New Identity Resolving Key, which
/// the monitor channel copies to every reader. Nothing of bluetoothd's is answered or changed.
public struct SharedEnrolment: Sendable {
    public let adapter: String
    public let options: Enrolment.Options
    let clock: any BLEClock
    let logger: Logger

    public init(adapter: String, options: Enrolment.Options, clock: any BLEClock, logger: Logger) {
        self.adapter = adapter
        self.options = options
        self.clock = clock
        self.logger = logger
    }

    /// Current_Settings bits (mgmt-api.txt, Read Controller Information).
    enum Setting {
        static let powered: UInt32 = 1 << 0
        static let bondable: UInt32 = 1 << 4
        static let lowEnergy: UInt32 = 1 << 9
    }

    /// Add Advertising flags: bit 0 switch into connectable mode, bit 1 advertise as discoverable (the kernel adds
    /// the Flags structure).
    static let connectableDiscoverable: UInt32 = 0b11

    /// Advertises, waits for a pairing to distribute an identity key on this adapter, and stops advertising,
    /// whatever the outcome.
    public func run(progress: @escaping @Sendable (Enrolment.Progress) -> Void) async throws
        -> SMPPairingResponder.PeerIdentity
    {
        guard let index = KernelAdapters.index(of: adapter) else {
            throw Enrolment.Failed(reason: .unavailable("not a kernel adapter: \(adapter) (expected hciN)"))
        }
        // Listening before advertising: no key distributed in between is missed.
        let keys = try KernelMonitorEvents<KernelIdentityKey>(name: "hci identity keys") { KernelIdentityKey.parse($0) }
        defer { keys.close() }
        let mgmt = try ManagementSocket()
        defer { mgmt.close() }
        var info = ByteCursor(
            try await mgmt.perform(Mgmt.readControllerInformation, "Read Controller Information", index: index))
        guard let address = BDAddress.read(from: &info), info.readBytes(3) != nil, info.readLE32() != nil,
            let settings = info.readLE32()
        else { throw Enrolment.Failed(reason: .unavailable("\(adapter): short controller information")) }
        if let refusal = Self.refusal(settings: settings, adapter: adapter) {
            throw Enrolment.Failed(reason: .unavailable(refusal))
        }
        let instance = try await freeInstance(mgmt, index: index)
        let data = Enrolment.advertisingData(name: options.name, flags: false)
        var p = ByteWriter(capacity: 11 + data.count)
        p.u8(instance)
        p.le32(Self.connectableDiscoverable)
        p.le16(0)  // Duration: the kernel's default rotation among instances
        // Timeout: the kernel removes the instance itself after this, should we not get to it.
        p.le16(UInt16(clamping: Int(options.timeout.seconds.rounded(.up)) + 5))
        p.u8(UInt8(data.count))
        p.u8(0)
        p.append(data)
        _ = try await mgmt.perform(Mgmt.addAdvertising, "Add Advertising", index: index, p.bytes)
        progress(.advertising(address, name: options.name))
        logger.info("enrol: \(adapter) advertises as \"\(options.name)\" in instance \(instance) (shared mode)")
        let outcome: Result<KernelIdentityKey, any Error>
        do {
            outcome = .success(try await firstKey(keys, index: index))
        } catch {
            outcome = .failure(error)
        }
        // Removed in a task of its own: when the caller was cancelled, the command must still go out.
        await Task {
            do {
                _ = try await mgmt.perform(Mgmt.removeAdvertising, "Remove Advertising", index: index, [instance])
            } catch let e as ManagementError where e.status == .invalidParameters {
                // Already gone: the kernel removes a connectable instance when a central connects to it.
                logger.debug("enrol: advertising instance \(instance) already removed by the kernel")
            } catch {
                logger.error("enrol: could not stop advertising on \(adapter): \(error)")
            }
        }.value
        let key = try outcome.get()
        logger.info("enrol: \(adapter) paired with \(key.identity) (its key from the kernel)")
        let identity = SMPPairingResponder.PeerIdentity(
            irk: key.key, addressType: key.identityIsPublic ? .public : .random, address: key.identity)
        progress(.paired(identity))
        return identity
    }

    /// Why the adapter cannot enrol now, or nil.
    static func refusal(settings: UInt32, adapter: String) -> String? {
        if settings & Setting.powered == 0 { return "\(adapter) is powered off (bluetoothctl power on)" }
        if settings & Setting.lowEnergy == 0 { return "\(adapter) has LE off (btmgmt -i \(adapter) le on)" }
        if settings & Setting.bondable == 0 {
            return "\(adapter) is not bondable, so the kernel would refuse the pairing (bluetoothctl pairable on)"
        }
        return nil
    }

    /// The lowest advertising instance nobody uses (bluetoothd may advertise in its own).
    private func freeInstance(_ mgmt: ManagementSocket, index: UInt16) async throws -> UInt8 {
        var c = ByteCursor(
            try await mgmt.perform(Mgmt.readAdvertisingFeatures, "Read Advertising Features", index: index))
        guard c.readLE32() != nil, c.readU8() != nil, c.readU8() != nil, let max = c.readU8(), let n = c.readU8(),
            let used = c.readBytes(Int(n))
        else { throw Enrolment.Failed(reason: .unavailable("\(adapter): short advertising features")) }
        guard let free = (1...Swift.max(1, max)).first(where: { !used.contains($0) }), max > 0 else {
            throw Enrolment.Failed(
                reason: .unavailable("\(adapter): all \(max) advertising instances are in use (by bluetoothd)"))
        }
        return free
    }

    /// The first identity key distributed on `index`, within the timeout.
    private func firstKey(_ keys: KernelMonitorEvents<KernelIdentityKey>, index: UInt16) async throws
        -> KernelIdentityKey
    {
        try await withThrowingTaskGroup(of: KernelIdentityKey?.self) { group in
            group.addTask { [clock, options] in
                try await clock.sleep(for: options.timeout)
                throw Enrolment.Failed(reason: .timedOut(options.timeout))
            }
            group.addTask {
                for try await key in keys.events where key.index == index { return key }
                return nil
            }
            defer { group.cancelAll() }
            guard let key = try await group.next() ?? nil else {
                throw Enrolment.Failed(reason: .unavailable("the monitor channel closed"))
            }
            return key
        }
    }
}
