import BLESpool

/// Which reading makes an MQTT 3.1.1 broker close the connection. A 3.1.1 broker has no way to refuse one publish: it
/// closes the connection (mosquitto does so for a packet larger than its `message_size_limit`), and after the next
/// CONNACK the publisher replays from the oldest unacknowledged reading, the same one, first. A reading that was the
/// oldest lost at `limit` connection losses in a row is taken to be the cause and set aside as a dead letter, so the
/// readings behind it flow; one acknowledgement of it clears the suspicion.
///
/// Events in (a publish lost to a closed connection, an acknowledgement, a new connection), a verdict out; the
/// publisher does the dead-lettering.
struct PoisonWatch: Sendable {
    enum Suspicion: Sendable, Equatable {
        case none
        /// `seq` was the oldest reading lost at the last `losses` connection losses in a row.
        case suspect(seq: UInt64, losses: Int)
    }

    /// Losses in a row (at least 1) after which the reading is set aside.
    let limit: Int
    private(set) var suspicion = Suspicion.none
    /// The oldest reading whose publish failed because the current connection ended: judged at the next connection.
    private(set) var oldestLost: SpooledReading?

    init(limit: Int) { self.limit = max(1, limit) }

    /// A publish failed unacknowledged because the connection ended.
    mutating func lost(_ r: SpooledReading) {
        if oldestLost.map({ r.seq < $0.seq }) ?? true { oldestLost = r }
    }

    /// The broker acknowledged `seq`: if it was the suspect, it is not what closes the connection.
    mutating func acknowledged(_ seq: UInt64) {
        if case .suspect(seq, _) = suspicion { suspicion = .none }
    }

    /// A new connection (its CONNACK): judges the connection that ended. Returns the reading to set aside, when the
    /// same one was the oldest lost `limit` times in a row.
    mutating func connected() -> SpooledReading? {
        guard let lost = oldestLost else { return nil }
        oldestLost = nil
        var losses = 1
        if case .suspect(lost.seq, let before) = suspicion { losses = before + 1 }
        guard losses >= limit else {
            suspicion = .suspect(seq: lost.seq, losses: losses)
            return nil
        }
        suspicion = .none
        return lost
    }
}
