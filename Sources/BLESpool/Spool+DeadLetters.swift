/// Why a reading became a dead letter: the protocol's number and its name, e.g. MQTT 5 reason 0x95 "Packet too
/// large", or libmosquitto's `MOSQ_ERR_OVERSIZE_PACKET` when the client refused it before sending.
public struct DeadLetterReason: Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var name: String

    public init(code: Int, name: String) {
        self.code = code
        self.name = name
    }

    public var description: String { "\(code) \(name)" }
}

/// A reading the broker can never take, kept whole with its seq so an operator can see it, export it, or put it
/// back in the queue once the cause is fixed (a broker's size limit raised).
public struct DeadLetter: Sendable {
    public var spooled: SpooledReading
    public var reason: DeadLetterReason
    /// When it was set aside (Unix time).
    public var at: Double
}

extension Spool {
    /// Moves a reading to the dead letters with the next commit (one fsync with everything else): from then on
    /// `pending` no longer returns it, and it stays in the file, bounded by `maxDeadLetters`/`maxDeadLetterBytes`
    /// (the oldest evicted and counted), until an operator requeues it.
    public func deadLetter(_ seq: UInt64, reason: DeadLetterReason, at: Double) {
        let wakes = bufferLock.withLock {
            deadLettering[seq] = (reason, at)
            return endsIdleRun()
        }
        if wakes { work.signal() }
    }

    /// Up to `limit` dead letters with seq > `after`, oldest first.
    public func deadLetters(after seq: UInt64 = 0, limit: Int = .max) throws -> [DeadLetter] {
        try databaseLock.withLock { try statements.deadLetters(after: seq, limit: min(limit, Int(Int32.max))) }
    }

    /// Puts dead letters back in the queue with their seq (all of them when `seqs` is nil), at once and durably:
    /// they are published in seq order with the rest once a publisher reads the spool from its oldest reading
    /// (at its next start or connection). Returns how many moved.
    @discardableResult
    public func requeueDeadLetters(_ seqs: [UInt64]? = nil) throws -> Int {
        try databaseLock.withLock {
            let chosen = try seqs ?? statements.deadLetters(after: 0, limit: Int(Int32.max)).map(\.spooled.seq)
            var next = ledger
            var moved = 0
            try db.execute("BEGIN IMMEDIATE")
            do {
                for seq in chosen {
                    guard try statements.copyToReadings(seq), let size = try statements.deleteDeadLetter(seq) else {
                        continue
                    }
                    next.rows += 1
                    next.storedBytes += size
                    next.deadLetters -= 1
                    next.deadLetterBytes -= size
                    moved += 1
                }
                try statements.persist(next)
                try db.execute("COMMIT")
            } catch {
                if db.inTransaction { try? db.execute("ROLLBACK") }
                throw error
            }
            ledger = next
            return moved
        }
    }

    /// Within a transaction: evicts the oldest dead letters beyond the bounds.
    func keepDeadLetterBound(_ next: inout Ledger) throws {
        while next.deadLetters > configuration.maxDeadLetters
            || next.deadLetterBytes > configuration.maxDeadLetterBytes && next.deadLetters > 1
        {
            guard let oldest = try statements.oldestDeadLetterSeq(), let size = try statements.deleteDeadLetter(oldest)
            else { break }
            next.deadLetters -= 1
            next.deadLetterBytes -= size
            next.deadLettersEvicted += 1
        }
    }
}
