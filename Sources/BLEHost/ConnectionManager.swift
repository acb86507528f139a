import BLEHCI
import BLETransport

/// Keeps the wanted peripherals connected, for ever: the gateway's "waiting connections".
///
/// A pure state machine (events in, actions out, virtual time passed in); the caller sends the HCI commands
/// and feeds back what the controller said. Policies:
/// - One LE Create Connection at a time (Core v5.4, Vol 4, Part E, §7.8.12: the controller answers a second one
///   with Command Disallowed while initiating).
/// - A peer is tried when it has been heard advertising connectably lately: the gateway scans all the time, so
///   it knows when a device is around, and an absent device never holds the initiator.
/// - An attempt that gets no LE Connection Complete within `connectTimeout` is cancelled (§7.8.13; the
///   controller then reports status 0x02), so a peripheral that never answers does not block the others, and
///   the next attempt goes to the peer waiting longest (rotation).
/// - Failed attempts back off per peer (doubling up to `maxBackoff`); a link that stayed up resets the backoff,
///   so a device that walks out of range and back is reconnected as soon as it is heard again.
/// - No more links than `maxConnections`, and fewer once the controller says Connection Limit Exceeded.
public struct ConnectionManager: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var maxConnections: Int = 4
        /// LE Create Connection Cancel after this long without a Connection Complete.
        public var connectTimeout: Duration = .seconds(5)
        /// An advertisement older than this does not make a peer a candidate.
        public var advertisementFreshness: Duration = .seconds(10)
        public var initialBackoff: Duration = .milliseconds(500)
        public var maxBackoff: Duration = .seconds(60)
        /// A link that lasted at least this long counts as a success: backoff and attempts reset.
        public var stableLink: Duration = .seconds(10)
        public var parameters = LEConnectionParameters()
        public init() {}
    }

    /// CoreBluetooth's CBPeripheralState, which the gateway publishes.
    public struct LinkState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let disconnected = LinkState(rawValue: "disconnected")
        public static let connecting = LinkState(rawValue: "connecting")
        public static let connected = LinkState(rawValue: "connected")
        public static let disconnecting = LinkState(rawValue: "disconnecting")
        public var description: String { rawValue }
    }

    /// Why a peer is in its state: an HCI status or reason from the controller, or the gateway's own doing.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        case hci(HCIStatus)
        /// The adapter went away (power, unplug, reset): every link is gone with it.
        case adapterLost
        /// No LE Connection Complete within the connect timeout; the attempt was cancelled.
        case connectTimeout
        /// The gateway dropped the link: its ATT client gave up (30 s transaction timeout) or a protocol error.
        case dropped(String)
        /// The intent was removed by configuration.
        case notWanted
        /// A state an earlier run of the gateway left retained, for a device this run has not met.
        case gatewayRestarted
        /// The gateway is stopping (a graceful shutdown): it ended the link itself.
        case gatewayStopped
        /// Two adapters: the links move to the other adapter; the gateway ended this one itself to make it there.
        case handedOver
        /// Shared mode: the kernel made the link and said why it failed or ended, as an errno
        /// ("ECONNREFUSED, Connection refused (errno 111)"); the kernel maps HCI reasons onto errnos.
        case kernel(String)

        public var description: String {
            switch self {
            case .hci(let s): "HCI 0x\(upperHex(s.rawValue, digits: 2)) \(s.name ?? "unknown status")"
            case .adapterLost: "adapter lost"
            case .connectTimeout: "connection attempt timed out"
            case .dropped(let why): "dropped by the gateway: \(why)"
            case .notWanted: "no longer wanted"
            case .gatewayRestarted: "the gateway restarted and has not met the device since"
            case .gatewayStopped: "the gateway stopped"
            case .handedOver: "handed over to the other adapter"
            case .kernel(let why): "kernel: \(why)"
            }
        }

        /// The HCI code, when there is one.
        public var code: UInt8? {
            if case .hci(let s) = self { return s.rawValue }
            return nil
        }
    }

    public struct Peer: Hashable, Sendable {
        public var address: BDAddress
        public var addressType: LEAddressType
        public init(address: BDAddress, addressType: LEAddressType) {
            self.address = address
            self.addressType = addressType
        }
    }

    /// What the gateway publishes for one peer.
    public struct Status: Sendable, Hashable {
        public var state: LinkState
        public var reason: Reason?
        /// Connection attempts since the link was last stable (the one that succeeded included).
        public var attempts: Int
        /// Clock time of the last state change.
        public var since: Duration
        public var handle: UInt16?

        public init(state: LinkState, reason: Reason?, attempts: Int, since: Duration, handle: UInt16? = nil) {
            self.state = state
            self.reason = reason
            self.attempts = attempts
            self.since = since
            self.handle = handle
        }
    }

    public enum Event: Sendable {
        /// Keep this peer connected.
        case want(Peer)
        /// Stop keeping it connected (disconnect if it is).
        case unwant(BDAddress)
        /// A connectable advertisement from the peer.
        case advertised(Peer)
        /// Command Status for LE Create Connection.
        case createStatus(HCIStatus)
        /// LE (Enhanced) Connection Complete.
        case connectionComplete(status: HCIStatus, handle: UInt16, peer: BDAddress)
        /// Command Status for Disconnect: a failure (unknown handle) means the link is already gone.
        case disconnectStatus(handle: UInt16, HCIStatus)
        case disconnectionComplete(handle: UInt16, reason: HCIStatus)
        /// Shared mode: the attempt to `peer` ended without a link; nil: it ended because it was cancelled (as
        /// asked by `.cancelCreateConnection`), the kernel's counterpart of status 0x02 after a Cancel.
        case connectionFailed(peer: BDAddress, Reason?)
        /// Shared mode: a link ended, for the kernel's reason (a remote end is ECONNRESET, a supervision timeout
        /// ETIMEDOUT); after our own `.disconnect` the reason the gateway gave stands.
        case linkEnded(handle: UInt16, Reason)
        /// The gateway gives up on a link (ATT timeout, protocol error): disconnect it.
        case drop(handle: UInt16, why: String)
        /// The controller is ready (brought up, or back after a recovery).
        case adapterUp
        /// The controller is gone: every link and attempt with it.
        case adapterDown
        /// The gateway is stopping: end every link (Disconnect, reason 0x15 Remote Device Terminated Connection due
        /// to Power Off), cancel the attempt in flight, make no new one.
        case shutdown
        /// Two adapters: the connections move to the other one. End every link on this controller (Disconnect,
        /// reason 0x13 Remote User Terminated Connection), cancel the attempt in flight, make no new one here; the
        /// next `adapterUp` (on the other controller, after this one's `adapterDown`) makes them again.
        case handOver
        case tick
    }

    public enum Action: Sendable, Hashable {
        case createConnection(Peer, LEConnectionParameters)
        case cancelCreateConnection
        case disconnect(handle: UInt16, reason: HCIStatus)
        /// A link is up: start its ATT bearer and GATT work.
        case linkUp(handle: UInt16, Peer)
        /// A link is down: its GATT work ends.
        case linkDown(handle: UInt16, Peer)
        /// Publish this peer's status.
        case publish(BDAddress, Status)
    }

    struct Entry: Sendable {
        var peer: Peer
        var wanted = true
        var status: Status
        var lastAdvertised: Duration?
        var notBefore: Duration = .zero
        var backoff: Duration
        var lastAttempt: Duration?
        var connectedAt: Duration?
    }

    /// Replaceable at any time (remote configuration); links and attempts in progress keep going.
    public var configuration: Configuration
    var entries: [BDAddress: Entry] = [:]
    /// The attempt in flight: its peer and deadline; `cancelling` once Cancel was sent.
    var pending: (address: BDAddress, deadline: Duration, cancelling: Bool)?
    var adapterReady = false
    /// After `.shutdown`: no more attempts, and links that end are the gateway's doing.
    var stopping = false
    /// After `.handOver`, until `.adapterDown`: this controller's links are being ended for the other adapter.
    var releasing = false
    /// Lowered when the controller says Connection Limit Exceeded / Memory Capacity Exceeded.
    var learnedLimit: Int?
    public private(set) var counters = Counters()

    public struct Counters: Sendable, Hashable {
        public var attempts = 0
        public var connections = 0
        public var failedAttempts = 0
        public var cancelledAttempts = 0
        public var disconnections = 0
        public init() {}
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Every peer the manager knows, with its status.
    public var statuses: [BDAddress: Status] { entries.mapValues(\.status) }

    public func status(of address: BDAddress) -> Status? { entries[address]?.status }

    var connectedCount: Int { entries.values.filter { $0.status.handle != nil }.count }

    var limit: Int { min(configuration.maxConnections, learnedLimit ?? .max) }

    /// The next moment a tick could change something, for the caller's timer.
    public var nextDeadline: Duration? {
        var d = pending.map { $0.deadline }
        for e in entries.values where e.wanted && e.status.state == .disconnected && e.notBefore > .zero {
            d = min(d ?? e.notBefore, e.notBefore)
        }
        return d
    }

    public mutating func handle(_ event: Event, now: Duration) -> [Action] {
        var out: [Action] = []
        switch event {
        case .want(let peer):
            if var e = entries[peer.address] {
                e.wanted = true
                e.peer = peer
                entries[peer.address] = e
            } else {
                entries[peer.address] = Entry(
                    peer: peer, status: Status(state: .disconnected, reason: nil, attempts: 0, since: now),
                    backoff: configuration.initialBackoff)
                out.append(.publish(peer.address, entries[peer.address]!.status))
            }
        case .unwant(let address):
            guard var e = entries[address] else { break }
            e.wanted = false
            entries[address] = e
            if let h = e.status.handle, e.status.state == .connected {
                out += set(address, .disconnecting, reason: .notWanted, now: now)
                out.append(.disconnect(handle: h, reason: .remoteUserTerminatedConnection))
            } else if pending?.address == address, pending?.cancelling == false {
                pending!.cancelling = true
                out.append(.cancelCreateConnection)
            } else if e.status.state == .disconnected {
                entries[address] = nil
            }
        case .advertised(let peer):
            guard var e = entries[peer.address] else { break }
            e.lastAdvertised = now
            // A random address's type may only be learned from the air.
            if e.status.state == .disconnected { e.peer.addressType = peer.addressType }
            entries[peer.address] = e
        case .createStatus(let status):
            guard let p = pending, !status.isSuccess else { break }
            // Refused at once: nothing is initiating.
            pending = nil
            if status == .connectionLimitExceeded || status == .memoryCapacityExceeded {
                learnedLimit = max(connectedCount, 1)
            }
            out += failAttempt(p.address, reason: .hci(status), now: now)
        case .connectionComplete(let status, let handle, let peerAddress):
            // A failed attempt may report no address (the controller never met the peer): it is the pending one.
            let address = status.isSuccess ? peerAddress : pending?.address ?? peerAddress
            let wasPending = pending?.address == address
            let cancelled = pending?.cancelling ?? false
            if wasPending { pending = nil }
            guard var e = entries[address] else {
                // A link nobody wants (an intent removed meanwhile): let it go.
                if status.isSuccess { out.append(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
                break
            }
            guard status.isSuccess else {
                // 0x02 after our Cancel (§7.8.13) is the connect timeout; anything else is the controller's reason.
                var reason: Reason =
                    cancelled && status == .unknownConnectionIdentifier ? .connectTimeout : .hci(status)
                if stopping { reason = .gatewayStopped } else if releasing { reason = .handedOver }
                if cancelled { counters.cancelledAttempts += 1 }
                out += failAttempt(address, reason: reason, now: now)
                break
            }
            counters.connections += 1
            e.connectedAt = now
            e.status.handle = handle
            entries[address] = e
            if stopping {
                // Made while the gateway stops (the Cancel crossed it): ended at once, never used.
                out += set(address, .disconnecting, reason: .gatewayStopped, now: now)
                out.append(.disconnect(handle: handle, reason: .remoteTerminatedPowerOff))
                break
            }
            if releasing {
                // Made while the links move to the other adapter (the Cancel crossed it): ended at once, never used.
                out += set(address, .disconnecting, reason: .handedOver, now: now)
                out.append(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
                break
            }
            out += set(address, .connected, reason: nil, now: now)
            out.append(.linkUp(handle: handle, e.peer))
            if !e.wanted {
                out += set(address, .disconnecting, reason: .notWanted, now: now)
                out.append(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
            }
        case .connectionFailed(let address, let reason):
            let cancelled = pending?.address == address && pending?.cancelling == true
            if pending?.address == address { pending = nil }
            var why = reason ?? .connectTimeout
            if stopping { why = .gatewayStopped }
            if cancelled { counters.cancelledAttempts += 1 }
            out += failAttempt(address, reason: why, now: now)
        case .linkEnded(let handle, let reason):
            guard let address = address(of: handle) else { break }
            out += linkGone(
                address,
                reason: entries[address]?.status.state == .disconnecting
                    ? entries[address]?.status.reason ?? reason : reason, now: now)
        case .disconnectStatus(let handle, let status):
            // Unknown Connection Identifier: the link was already gone; its Disconnection Complete came or will not.
            guard !status.isSuccess, let address = address(of: handle) else { break }
            out += linkGone(address, reason: .hci(status), now: now)
        case .disconnectionComplete(let handle, let reason):
            guard let address = address(of: handle) else { break }
            out += linkGone(
                address,
                reason: entries[address]?.status.state == .disconnecting
                    ? entries[address]?.status.reason ?? .hci(reason) : .hci(reason), now: now)
        case .drop(let handle, let why):
            guard let address = address(of: handle), entries[address]?.status.state == .connected else { break }
            out += set(address, .disconnecting, reason: .dropped(why), now: now)
            out.append(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
        case .adapterUp:
            adapterReady = true
            // A new controller session: a hand-over asked of an earlier one (which may have ended before it ever
            // came up, so without its `adapterDown`) is not this one's.
            releasing = false
        case .adapterDown:
            adapterReady = false
            releasing = false
            pending = nil
            learnedLimit = nil
            for (address, e) in entries where e.status.state != .disconnected {
                let handedOver = e.status.state == .disconnecting && e.status.reason == .handedOver
                out += linkGone(
                    address, reason: stopping ? .gatewayStopped : handedOver ? .handedOver : .adapterLost,
                    now: now)
            }
        case .shutdown:
            stopping = true
            out += endEveryLink(.gatewayStopped, code: .remoteTerminatedPowerOff, now: now)
        case .handOver:
            releasing = true
            out += endEveryLink(.handedOver, code: .remoteUserTerminatedConnection, now: now)
        case .tick:
            break
        }
        out += step(now: now)
        return out
    }

    /// The gateway ends every link itself (a stop, a hand-over): the attempt in flight is cancelled, each link
    /// disconnected with `code` and reported `disconnecting` for `reason`.
    mutating func endEveryLink(_ reason: Reason, code: HCIStatus, now: Duration) -> [Action] {
        var out: [Action] = []
        if let p = pending, !p.cancelling {
            pending!.cancelling = true
            out.append(.cancelCreateConnection)
        }
        for (address, e) in entries where e.status.state == .connected {
            guard let h = e.status.handle else { continue }
            out += set(address, .disconnecting, reason: reason, now: now)
            out.append(.disconnect(handle: h, reason: code))
        }
        return out
    }

    /// Timers and the next attempt.
    mutating func step(now: Duration) -> [Action] {
        guard adapterReady, !stopping, !releasing else { return [] }
        if let p = pending {
            if !p.cancelling, now >= p.deadline {
                pending!.cancelling = true
                return [.cancelCreateConnection]
            }
            return []
        }
        guard connectedCount < limit else { return [] }
        // The candidate waiting longest: never tried first, then the oldest attempt.
        let candidates = entries.values.filter { e in
            e.wanted && e.status.state == .disconnected && now >= e.notBefore
                && e.lastAdvertised.map { now - $0 <= configuration.advertisementFreshness } == true
        }
        guard
            let next = candidates.min(by: {
                ($0.lastAttempt ?? .zero, $0.peer.address.description)
                    < ($1.lastAttempt ?? .zero, $1.peer.address.description)
            })
        else { return [] }
        let address = next.peer.address
        entries[address]!.lastAttempt = now
        entries[address]!.status.attempts += 1
        counters.attempts += 1
        pending = (address, now + configuration.connectTimeout, false)
        var out = set(address, .connecting, reason: nil, now: now)
        out.append(.createConnection(next.peer, configuration.parameters))
        return out
    }

    mutating func failAttempt(_ address: BDAddress, reason: Reason, now: Duration) -> [Action] {
        guard var e = entries[address] else { return [] }
        counters.failedAttempts += 1
        e.notBefore = now + e.backoff
        e.backoff = min(e.backoff * 2, configuration.maxBackoff)
        entries[address] = e
        if !e.wanted {
            entries[address] = nil
            return []
        }
        return set(address, .disconnected, reason: reason, now: now)
    }

    mutating func linkGone(_ address: BDAddress, reason: Reason, now: Duration) -> [Action] {
        guard var e = entries[address] else { return [] }
        var out: [Action] = []
        if let h = e.status.handle {
            counters.disconnections += 1
            out.append(.linkDown(handle: h, e.peer))
        }
        if let up = e.connectedAt, now - up >= configuration.stableLink || reason == .handedOver {
            // Stable, or ended by the gateway to move it: no penalty, the next attempt may come at once.
            e.backoff = configuration.initialBackoff
            e.notBefore = .zero
            e.status.attempts = 0
        } else if e.connectedAt != nil {
            // Up and down again at once: back off as for a failed attempt.
            e.notBefore = now + e.backoff
            e.backoff = min(e.backoff * 2, configuration.maxBackoff)
        }
        if pending?.address == address { pending = nil }
        e.connectedAt = nil
        e.status.handle = nil
        // Heard before the link dropped is no evidence it is still around.
        e.lastAdvertised = nil
        entries[address] = e
        if !e.wanted {
            entries[address] = nil
            e.status.state = .disconnected
            e.status.reason = reason
            e.status.since = now
            out.append(.publish(address, e.status))
            return out
        }
        out += set(address, .disconnected, reason: reason, now: now)
        return out
    }

    mutating func set(_ address: BDAddress, _ state: LinkState, reason: Reason?, now: Duration) -> [Action] {
        guard var e = entries[address] else { return [] }
        e.status.state = state
        e.status.reason = reason
        e.status.since = now
        entries[address] = e
        return [.publish(address, e.status)]
    }

    func address(of handle: UInt16) -> BDAddress? {
        entries.first { $0.value.status.handle == handle }?.key
    }
}
