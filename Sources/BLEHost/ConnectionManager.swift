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

    /// The LE Create Connection in flight (one at a time, §7.8.12).
    enum Attempt: Sendable, Equatable {
        /// Sent; cancelled if no Connection Complete comes by `deadline`.
        case initiating(BDAddress, deadline: Duration)
        /// LE Create Connection Cancel sent (§7.8.13): its Connection Complete, status 0x02, is still to come.
        case cancelling(BDAddress)

        var address: BDAddress {
            switch self {
            case .initiating(let a, _), .cancelling(let a): a
            }
        }

        var isCancelling: Bool {
            if case .cancelling = self { return true }
            return false
        }
    }

    /// One controller session: from `adapterUp` to `adapterDown`.
    struct Session: Sendable {
        var attempt: Attempt?
        /// Lowered when the controller says Connection Limit Exceeded / Memory Capacity Exceeded.
        var learnedLimit: Int?
    }

    /// What the manager may do, with the data each phase carries.
    enum Phase: Sendable {
        /// No controller yet, or it went away: nothing is attempted, and no attempt is in flight.
        case adapterDown
        /// The controller is up: links are made, one attempt at a time, up to the limit.
        case keeping(Session)
        /// After `.handOver`, until the next controller session: this controller's links end for the other
        /// adapter and nothing new is made here. `nil` when the hand-over came before the controller was up.
        case releasing(Session?)
        /// After `.shutdown`, for good: links that end are the gateway's doing and none is made. The attempt is
        /// the one still in flight on a controller that is up.
        case stopping(Attempt?)
    }

    /// Replaceable at any time (remote configuration); links and attempts in progress keep going.
    public var configuration: Configuration
    var entries: [BDAddress: Entry] = [:]
    var phase = Phase.adapterDown
    public private(set) var counters = Counters()

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Every peer the manager knows, with its status.
    public var statuses: [BDAddress: Status] { entries.mapValues(\.status) }

    public func status(of address: BDAddress) -> Status? { entries[address]?.status }

    var connectedCount: Int { entries.values.filter { $0.status.handle != nil }.count }

    /// The attempt in flight, whatever the phase.
    var attempt: Attempt? {
        get {
            switch phase {
            case .adapterDown: nil
            case .keeping(let s): s.attempt
            case .releasing(let s): s?.attempt
            case .stopping(let a): a
            }
        }
        set {
            switch phase {
            case .adapterDown: precondition(newValue == nil, "an attempt without a controller")
            case .keeping(var s):
                s.attempt = newValue
                phase = .keeping(s)
            case .releasing(let s):
                guard newValue != nil || s != nil else { return }
                var session = s ?? Session()
                session.attempt = newValue
                phase = .releasing(session)
            case .stopping: phase = .stopping(newValue)
            }
        }
    }

    /// How the gateway ends links now, when it ends them itself; nil while links are kept.
    var ending: (reason: Reason, code: HCIStatus)? {
        switch phase {
        case .stopping: (.gatewayStopped, .remoteTerminatedPowerOff)
        case .releasing: (.handedOver, .remoteUserTerminatedConnection)
        case .adapterDown, .keeping: nil
        }
    }

    /// The next moment a tick could change something, for the caller's timer.
    public var nextDeadline: Duration? {
        var d: Duration?
        if case .initiating(_, let deadline) = attempt { d = deadline }
        for e in entries.values where e.wanted && e.status.state == .disconnected && e.notBefore > .zero {
            d = min(d ?? e.notBefore, e.notBefore)
        }
        return d
    }

    public mutating func handle(_ event: Event, now: Duration) -> [Action] {
        var out: [Action]
        switch event {
        case .want(let peer): out = want(peer, now: now)
        case .unwant(let address): out = unwant(address, now: now)
        case .advertised(let peer): out = advertised(peer, now: now)
        case .createStatus(let status): out = createStatus(status, now: now)
        case .connectionComplete(let status, let handle, let peer):
            out = connectionComplete(status: status, handle: handle, peer: peer, now: now)
        case .connectionFailed(let address, let reason): out = connectionFailed(address, reason, now: now)
        case .linkEnded(let handle, let reason): out = linkEnded(handle: handle, reason, now: now)
        case .disconnectStatus(let handle, let status): out = disconnectStatus(handle: handle, status, now: now)
        case .disconnectionComplete(let handle, let reason):
            out = disconnectionComplete(handle: handle, reason: reason, now: now)
        case .drop(let handle, let why): out = drop(handle: handle, why: why, now: now)
        case .adapterUp: out = adapterUp()
        case .adapterDown: out = adapterDown(now: now)
        case .shutdown: out = shutdown(now: now)
        case .handOver: out = handOver(now: now)
        case .tick: out = []
        }
        forgetPassedBackoffs(now: now)
        out += step(now: now)
        return out
    }

    /// A backoff that has ended is no longer a moment to wake for: the caller sleeps until `nextDeadline`, and a
    /// passed one would wake it at once, again and again, while a device stays away.
    mutating func forgetPassedBackoffs(now: Duration) {
        for (address, e) in entries where e.notBefore > .zero && e.notBefore <= now {
            entries[address]!.notBefore = .zero
        }
    }

    mutating func want(_ peer: Peer, now: Duration) -> [Action] {
        if var e = entries[peer.address] {
            e.wanted = true
            e.peer = peer
            entries[peer.address] = e
            return []
        }
        let e = Entry(
            peer: peer, status: Status(state: .disconnected, reason: nil, attempts: 0, since: now),
            backoff: configuration.initialBackoff)
        entries[peer.address] = e
        return [.publish(peer.address, e.status)]
    }

    mutating func unwant(_ address: BDAddress, now: Duration) -> [Action] {
        guard var e = entries[address] else { return [] }
        e.wanted = false
        entries[address] = e
        if let h = e.status.handle, e.status.state == .connected {
            return set(address, .disconnecting, reason: .notWanted, now: now)
                + [.disconnect(handle: h, reason: .remoteUserTerminatedConnection)]
        }
        if case .initiating(address, _) = attempt {
            attempt = .cancelling(address)
            return [.cancelCreateConnection]
        }
        if e.status.state == .disconnected { entries[address] = nil }
        return []
    }

    mutating func advertised(_ peer: Peer, now: Duration) -> [Action] {
        guard var e = entries[peer.address] else { return [] }
        e.lastAdvertised = now
        // A random address's type may only be learned from the air.
        if e.status.state == .disconnected { e.peer.addressType = peer.addressType }
        entries[peer.address] = e
        return []
    }

    mutating func createStatus(_ status: HCIStatus, now: Duration) -> [Action] {
        guard let a = attempt, !status.isSuccess else { return [] }
        // Refused at once: nothing is initiating.
        attempt = nil
        if status == .connectionLimitExceeded || status == .memoryCapacityExceeded {
            let learned = max(connectedCount, 1)
            switch phase {
            case .keeping(var s):
                s.learnedLimit = learned
                phase = .keeping(s)
            case .releasing(var s?):
                // Kept for this controller, should the next `adapterUp` find it still up.
                s.learnedLimit = learned
                phase = .releasing(s)
            case .adapterDown, .releasing(nil), .stopping: break
            }
        }
        return failAttempt(a.address, reason: .hci(status), now: now)
    }

    mutating func connectionComplete(status: HCIStatus, handle: UInt16, peer: BDAddress, now: Duration)
        -> [Action]
    {
        // A failed attempt may report no address (the controller never met the peer): it is the pending one.
        let address = status.isSuccess ? peer : attempt?.address ?? peer
        let cancelled = attempt?.isCancelling ?? false
        if attempt?.address == address { attempt = nil }
        guard var e = entries[address] else {
            // A link nobody wants (an intent removed meanwhile): let it go.
            return status.isSuccess ? [.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)] : []
        }
        guard status.isSuccess else {
            // 0x02 after our Cancel (§7.8.13) is the connect timeout; anything else is the controller's reason.
            let reason: Reason =
                ending?.reason ?? (cancelled && status == .unknownConnectionIdentifier ? .connectTimeout : .hci(status))
            if cancelled { counters.cancelledAttempts += 1 }
            return failAttempt(address, reason: reason, now: now)
        }
        counters.connections += 1
        e.connectedAt = now
        e.status.handle = handle
        entries[address] = e
        if let (reason, code) = ending {
            // Made while the gateway stops or hands the links over (the Cancel crossed it): ended at once, never
            // used.
            return set(address, .disconnecting, reason: reason, now: now) + [.disconnect(handle: handle, reason: code)]
        }
        var out = set(address, .connected, reason: nil, now: now)
        out.append(.linkUp(handle: handle, e.peer))
        if !e.wanted {
            out += set(address, .disconnecting, reason: .notWanted, now: now)
            out.append(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
        }
        return out
    }

    mutating func connectionFailed(_ address: BDAddress, _ reason: Reason?, now: Duration) -> [Action] {
        var cancelled = false
        if let a = attempt, a.address == address {
            cancelled = a.isCancelling
            attempt = nil
        }
        var why = reason ?? .connectTimeout
        if case .stopping = phase { why = .gatewayStopped }
        if cancelled { counters.cancelledAttempts += 1 }
        return failAttempt(address, reason: why, now: now)
    }

    mutating func linkEnded(handle: UInt16, _ reason: Reason, now: Duration) -> [Action] {
        guard let address = address(of: handle) else { return [] }
        return linkGone(address, reason: reasonGiven(address) ?? reason, now: now)
    }

    mutating func disconnectStatus(handle: UInt16, _ status: HCIStatus, now: Duration) -> [Action] {
        // Unknown Connection Identifier: the link was already gone; its Disconnection Complete came or will not.
        guard !status.isSuccess, let address = address(of: handle) else { return [] }
        return linkGone(address, reason: .hci(status), now: now)
    }

    mutating func disconnectionComplete(handle: UInt16, reason: HCIStatus, now: Duration) -> [Action] {
        guard let address = address(of: handle) else { return [] }
        return linkGone(address, reason: reasonGiven(address) ?? .hci(reason), now: now)
    }

    /// After the gateway's own Disconnect, the reason it gave stands over the one the link ends with.
    func reasonGiven(_ address: BDAddress) -> Reason? {
        guard let e = entries[address], e.status.state == .disconnecting else { return nil }
        return e.status.reason
    }

    mutating func drop(handle: UInt16, why: String, now: Duration) -> [Action] {
        guard let address = address(of: handle), entries[address]?.status.state == .connected else { return [] }
        return set(address, .disconnecting, reason: .dropped(why), now: now)
            + [.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)]
    }

    mutating func adapterUp() -> [Action] {
        switch phase {
        case .adapterDown: phase = .keeping(Session())
        case .keeping: break
        // A new controller session: a hand-over asked of an earlier one (which may have ended before it ever came
        // up, so without its `adapterDown`) is not this one's.
        case .releasing(let s): phase = .keeping(s ?? Session())
        case .stopping: break
        }
        return []
    }

    mutating func adapterDown(now: Duration) -> [Action] {
        let stopping: Bool
        if case .stopping = phase {
            phase = .stopping(nil)
            stopping = true
        } else {
            phase = .adapterDown
            stopping = false
        }
        var out: [Action] = []
        for (address, e) in entries where e.status.state != .disconnected {
            let handedOver = e.status.state == .disconnecting && e.status.reason == .handedOver
            out += linkGone(
                address, reason: stopping ? .gatewayStopped : handedOver ? .handedOver : .adapterLost, now: now)
        }
        return out
    }

    mutating func shutdown(now: Duration) -> [Action] {
        phase = .stopping(attempt)
        return endEveryLink(.gatewayStopped, code: .remoteTerminatedPowerOff, now: now)
    }

    mutating func handOver(now: Duration) -> [Action] {
        switch phase {
        case .adapterDown: phase = .releasing(nil)
        case .keeping(let s): phase = .releasing(s)
        case .releasing: break
        // Every link already ends for the stop, which the hand-over does not overrule.
        case .stopping: return []
        }
        return endEveryLink(.handedOver, code: .remoteUserTerminatedConnection, now: now)
    }

    /// The gateway ends every link itself (a stop, a hand-over): the attempt in flight is cancelled, each link
    /// disconnected with `code` and reported `disconnecting` for `reason`.
    mutating func endEveryLink(_ reason: Reason, code: HCIStatus, now: Duration) -> [Action] {
        var out: [Action] = []
        if case .initiating(let address, _) = attempt {
            attempt = .cancelling(address)
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
        guard case .keeping(let session) = phase else { return [] }
        switch session.attempt {
        case .initiating(let address, let deadline) where now >= deadline:
            attempt = .cancelling(address)
            return [.cancelCreateConnection]
        case .initiating, .cancelling: return []
        case nil: break
        }
        guard connectedCount < min(configuration.maxConnections, session.learnedLimit ?? .max) else { return [] }
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
        attempt = .initiating(address, deadline: now + configuration.connectTimeout)
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
        if attempt?.address == address { attempt = nil }
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
