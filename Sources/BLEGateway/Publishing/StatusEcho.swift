/// Under MQTT 3.1.1 a broker acknowledges a publish its ACL denies as if it had delivered it (there are no reason codes
/// in a 3.1.1 PUBACK), so no client can keep such a reading. What a gateway can do is notice: after each connection it
/// reads its own retained status back, and when the online state it just published never arrives, publishes are
/// probably being denied (`health.publish.denied_suspected`, logged once per episode). docs/DEPLOY.md says why
/// MQTT 5 is the safe choice with ACLs.
///
/// Pure: events in, what to report out; the runtime subscribes, schedules the deadline and logs.
struct StatusEcho: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Not connected, or not under MQTT 3.1.1.
        case idle
        /// Connected at `since`; the online status recorded then has a seq above `above`.
        case awaiting(above: UInt64, since: Double)
        /// Our own online status came back after this connection.
        case confirmed
        /// It did not come back within the wait: publishes are probably denied. An online status with a seq above
        /// `above` (one recorded at a later connection) clears it.
        case suspected(since: Double, above: UInt64)
    }

    enum Action: Sendable, Equatable {
        /// The echo did not come: log once, report in health.
        case suspect
        /// It came after a suspicion: log that it is over.
        case clear
    }

    private(set) var state = State.idle
    /// Episodes begun (each logged once).
    private(set) var episodes = 0

    var suspected: Bool { if case .suspected = state { true } else { false } }

    /// A CONNACK; the online status for this connection is recorded with a seq above `lastSeq`.
    mutating func connected(lastSeq: UInt64, now: Double) {
        switch state {
        case .suspected(let since, _):
            // Kept until an echo clears it: a reconnection alone does not.
            state = .suspected(since: since, above: lastSeq)
        default:
            state = .awaiting(above: lastSeq, since: now)
        }
    }

    /// Our status topic delivered a message: its `run`, `seq` and whether it says online.
    mutating func received(ownRun: Bool, seq: UInt64?, online: Bool) -> Action? {
        guard ownRun, online, let seq else { return nil }
        switch state {
        case .awaiting(let above, _) where seq > above:
            state = .confirmed
            return nil
        case .suspected(_, let above) where seq > above:
            state = .confirmed
            return .clear
        default:
            return nil
        }
    }

    /// The wait after the connection at `since` is over.
    mutating func deadline(connectedAt since: Double, now: Double) -> Action? {
        guard case .awaiting(let above, let at) = state, at == since else { return nil }
        state = .suspected(since: now, above: above)
        episodes += 1
        return .suspect
    }

    mutating func disconnected() {
        if case .awaiting = state { state = .idle }
    }
}
