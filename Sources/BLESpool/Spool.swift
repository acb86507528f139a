import BLETransport
import Foundation

/// The durable outbox between the domain and MQTT: every reading is appended here, committed to SQLite (WAL) in
/// batches of at most one commit window, given its `seq` at commit, read back oldest first by the publisher and
/// deleted only once the broker acknowledged it.
///
/// Concurrency: the one owner of its `sqlite3*`. `@unchecked Sendable` because two locks guard every stored
/// property: `bufferLock` (the cheap in-memory buffer producers append to) and `databaseLock` (the connection, its
/// statements and the ledger). Lock order is always `databaseLock` then `bufferLock`. A commit holds `databaseLock`
/// across its fsync; appenders only ever take `bufferLock`, so they never wait for the disk.
public final class Spool: @unchecked Sendable {
    public let configuration: SpoolConfiguration

    // Guarded by bufferLock.
    let bufferLock = NSLock()
    private var buffer = ReadingBuffer()
    private var acknowledged: Set<UInt64> = []
    /// Readings to move to the dead letters with the next commit, with why and when.
    var deadLettering: [UInt64: (reason: DeadLetterReason, at: Double)] = [:]
    private var droppedInMemorySinceCommit: UInt64 = 0
    /// States refused because the buffer already held `maxBufferedStates` (a disk that stays full): guarded by
    /// `bufferLock`, published as the state drops.
    private var refusedStates: UInt64 = 0
    private var refusedStateCounters: DropCounters {
        var d = DropCounters()
        d.droppedInMemory = bufferLock.withLock { refusedStates }
        return d
    }
    /// Wakes `run` before its window ends: an urgent reading is waiting.
    private let urgent = WakeSignal()
    /// Whether `run` waits with nothing to commit (`awaitingWork`) instead of counting windows: a spool with nothing
    /// to do wakes nobody (issue #42, "idle is idle"). The producer that ends the wait clears it and signals `work`.
    var runIsIdle = false
    /// Wakes an idle `run`: there is something to commit.
    let work = WakeSignal()

    // Guarded by databaseLock.
    let databaseLock = NSLock()
    /// Replaced only by a quarantine (`Spool+Quarantine.swift`): the file found corrupt while running is set aside.
    var db: SQLiteConnection
    var statements: Statements
    var ledger: Ledger
    private let reservation: SequenceReservation
    private let ballast: SpoolBallast
    /// Times the reserve was released for a state on a full file system.
    private var reserveReleases: UInt64 = 0
    private var reservedSeq: UInt64
    private var commits: UInt64 = 0
    private var failedCommits: UInt64 = 0
    var lastError: SpoolError?
    private var openReport = SpoolOpenReport()
    /// Run-time quarantines (`Spool+Quarantine.swift`): the salvage not yet committed in the fresh file, how many
    /// there were, the last one, I/O errors in a row, and who is told.
    var pendingSalvage: PendingSalvage?
    var quarantines: UInt64 = 0
    var lastQuarantine: SpoolOpenReport?
    var ioErrorsInARow = 0
    var quarantineObserver: (@Sendable (SpoolOpenReport) -> Void)?
    /// Told each range of seqs once its commit returned (fsync'd at `synchronous=FULL`): the moment a reading is
    /// durable, which the power-loss drill (Tests/kernel/powerloss.sh) holds the spool to.
    private var commitObserver: (@Sendable (ClosedRange<UInt64>) -> Void)?

    /// Opens the spool at `configuration.path`, creating it if needed. A file that is not a readable database is
    /// moved aside to `<path>.corrupt-<UTC timestamp>`, readable rows are copied into a fresh spool with their seq,
    /// and `statistics.openReport` says so. Throws when the fresh spool cannot be created either.
    public init(configuration: SpoolConfiguration) throws {
        precondition(configuration.keepOneSampleIn >= 1, "keepOneSampleIn must be at least 1")
        precondition(configuration.trimFraction > 0 && configuration.trimFraction <= 1, "trimFraction is in (0, 1]")
        self.configuration = configuration
        let path = configuration.path
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var report = SpoolOpenReport()
        var salvage = SpoolSalvage()
        // A salvage a crash cut short (the file set aside, its rows not yet committed here) is finished first.
        if let interrupted = SpoolSalvage.interrupted(path) {
            report.resumedSalvageOf = interrupted
            salvage = SpoolSalvage.read(interrupted)
        }
        let connection: SQLiteConnection
        do {
            connection = try Spool.open(configuration)
        } catch let error as SpoolError where error.code == .corrupt {
            report.corruption = error
            let aside = try SpoolSalvage.moveAside(path)
            report.movedAsideTo = aside
            salvage.merge(SpoolSalvage.read(aside))
            connection = try Spool.open(configuration)
        }
        db = connection
        statements = try Statements(connection)
        reservation = SequenceReservation(spoolPath: path)
        ballast = SpoolBallast(spoolPath: path, bytes: configuration.reserveBytes)
        ballast.hold()

        var loaded = try Ledger.load(connection)
        let reserved = reservation.read() ?? 0
        // A spool without its counter is new or replaces a lost file: continue above every seq ever issued.
        if !loaded.counterWasStored {
            loaded.ledger.lastSeq = max(loaded.ledger.lastSeq, reserved, salvage.lastSeq)
            report.seqFromReservation = reserved > 0 && reserved >= salvage.lastSeq
            loaded.ledger.samples = salvage.counters
        }
        // A resumed salvage into a spool that already committed: still never below what the old file issued.
        loaded.ledger.lastSeq = max(loaded.ledger.lastSeq, salvage.lastSeq)
        ledger = loaded.ledger
        reservedSeq = reserved
        report.salvagedReadings = salvage.rows.count
        report.salvagedDeadLetters = salvage.deadLetters.count
        // Persist the counter (and any salvaged rows) now, so a fresh spool knows its floor from the first moment.
        let salvaged = !salvage.rows.isEmpty || !salvage.deadLetters.isEmpty
        if !loaded.counterWasStored || salvaged || reserved <= loaded.ledger.lastSeq {
            _ = try databaseLock.withLock {
                try writeTransaction(
                    batch: [], acks: [], droppedInMemory: 0, salvaged: salvage.rows,
                    salvagedDeadLetters: salvage.deadLetters, forcePersist: true
                )
            }
        }
        // The salvage is committed: the marker goes, and the files set aside are kept within their bound.
        if report.movedAsideTo != nil || report.resumedSalvageOf != nil { SpoolSalvage.finished(path) }
        let kept = SpoolSalvage.prune(path, keep: configuration.maxSetAsideFiles, bytes: configuration.maxBytes)
        report.setAsideRemoved = kept.removed
        report.setAsideFiles = kept.left
        report.setAsideBytes = kept.leftBytes
        openReport = report
    }

    static func open(_ configuration: SpoolConfiguration) throws -> SQLiteConnection {
        let db = try SQLiteConnection(path: configuration.path)
        try SpoolSchema.configure(db, configuration)
        if configuration.verifyOnOpen, let complaint = try SpoolSchema.verify(db) {
            throw SpoolError(.corrupt, path: configuration.path, context: "open: quick_check: \(complaint)")
        }
        try db.execute(SpoolSchema.create)
        return db
    }

    // MARK: Producers

    /// Buffers a reading for the next commit (at most one commit window away). Never blocks on the disk. A reading
    /// appended here may be lost by a crash before that commit: use it for samples, `appendDurably` for states.
    ///
    /// Returns false only for a state event refused because the buffer already holds `maxBufferedStates` states
    /// (commits have been failing); a sample is always taken, the bound dropping the oldest buffered sample instead.
    ///
    /// `urgent`: someone waits for this one (a peripheral's value): `run` commits it within the urgent commit window
    /// (5 ms by default) instead of at the end of the commit window, with whatever else is buffered by then.
    @discardableResult
    public func append(_ reading: Reading, urgent: Bool = false) -> Bool {
        let (taken, wakes) = bufferLock.withLock {
            if reading.readingClass == .state, buffer.states >= configuration.maxBufferedStates {
                refusedStates += 1
                return (false, false)
            }
            let removed = buffer.append(reading, maxSamples: configuration.maxBufferedSamples)
            droppedInMemorySinceCommit += UInt64(removed)
            return (true, endsIdleRun())
        }
        if wakes { work.signal() }
        if urgent, taken { self.urgent.signal() }
        return taken
    }

    /// Caller holds `bufferLock` and has just given the spool something to commit: whether `run` was idle, in which
    /// case the caller signals `work` once it let go of the lock.
    func endsIdleRun() -> Bool {
        defer { runIsIdle = false }
        return runIsIdle
    }

    /// Appends and commits at once (with every reading buffered before it, so order is kept); returns its seq.
    /// For state events, which must be durable before their producer is told so.
    ///
    /// Throws `bufferFull` when the buffer already holds `maxBufferedStates` states: the reading was NOT taken.
    /// Any other error (e.g. `diskFull`) means the reading WAS taken and stays buffered, in order, until a commit
    /// succeeds; it is not durable yet, and the producer must not append it again.
    @discardableResult
    public func appendDurably(_ reading: Reading) throws -> UInt64 {
        try databaseLock.withLock {
            let batch: [Reading] = try bufferLock.withLock {
                if reading.readingClass == .state, buffer.states >= configuration.maxBufferedStates {
                    refusedStates += 1
                    throw SpoolError(.bufferFull, path: configuration.path, context: "appendDurably")
                }
                let removed = buffer.append(reading, maxSamples: configuration.maxBufferedSamples)
                droppedInMemorySinceCommit += UInt64(removed)
                return buffer.takeAll()
            }
            // The reading is the last of the batch: its seq is the upper bound of the committed range.
            guard let range = try commitLocked(batch) else {
                preconditionFailure("a non-empty batch commits a non-empty range")
            }
            return range.upperBound
        }
    }

    // MARK: Committing

    /// `observer` is told the seqs of every commit once it returned, that is once they are durable; called with the
    /// database lock held, so it must not call back into the spool. One observer; a later call replaces it.
    public func observeCommits(_ observer: @escaping @Sendable (ClosedRange<UInt64>) -> Void) {
        databaseLock.withLock { commitObserver = observer }
    }

    /// Commits everything buffered and every acknowledgement in one transaction; assigns the seqs. Returns the seqs
    /// committed, or nil when there were no readings. On failure nothing was written: the readings go back to the
    /// front of the buffer (bounded), the error is kept in `statistics.lastError` and thrown.
    @discardableResult
    public func commit() throws -> ClosedRange<UInt64>? {
        try databaseLock.withLock {
            let batch = bufferLock.withLock { buffer.takeAll() }
            return try commitLocked(batch)
        }
    }

    /// Commits every `commitWindow` until cancelled, then once more — and, between, within `urgentCommitWindow` of
    /// an urgent reading. Failures do not stop it: they are counted and kept in `statistics.lastError`, and the next
    /// window retries (recovery when the disk has room again). `committed` is told of each window's readings once
    /// they are durable (a publisher waiting for them).
    ///
    /// With nothing to commit it waits for the next reading, acknowledgement or dead letter instead, and the window
    /// starts with it: a reading still waits at most one window, and an idle gateway is not woken ten times a second.
    public func run(clock: any BLEClock, committed: @Sendable () -> Void = {}) async {
        let window = configuration.effectiveCommitWindow
        var deadline = clock.now() + window
        while !Task.isCancelled {
            if awaitingWork() {
                await work.wait()
                if Task.isCancelled { break }
                deadline = clock.now() + window
            }
            await urgent.wait(upTo: deadline - clock.now(), clock: clock)
            if Task.isCancelled { break }
            if clock.now() < deadline {
                // Woken by an urgent reading: gather what comes with it for the urgent window, commit, and keep the
                // regular windows' schedule.
                let gather = min(clock.now() + configuration.effectiveUrgentCommitWindow, deadline)
                do { try await clock.sleep(until: gather) } catch { break }
                if (try? commit()) != nil { committed() }
                if clock.now() < deadline { continue }
            }
            if (try? commit()) != nil { committed() }
            // Windows are counted from the previous deadline, not from the end of the commit, so a slow fsync does
            // not stretch the window; after a long stall, start afresh rather than commit back to back.
            deadline += window
            let now = clock.now()
            if deadline < now { deadline = now + window }
        }
        _ = try? commit()
    }

    /// Nothing to commit (no reading, acknowledgement, dead letter, in-memory drop or salvage): `run` is marked idle,
    /// and the next producer wakes it. Takes both locks, in their order.
    private func awaitingWork() -> Bool {
        databaseLock.withLock {
            let salvaging = pendingSalvage != nil
            return bufferLock.withLock {
                let nothing =
                    buffer.isEmpty && acknowledged.isEmpty && deadLettering.isEmpty
                    && droppedInMemorySinceCommit == 0 && !salvaging
                runIsIdle = nothing
                return nothing
            }
        }
    }

    func commitLocked(_ batch: [Reading], afterQuarantine: Bool = false) throws -> ClosedRange<UInt64>? {
        let (acks, dropped, dead): ([UInt64], UInt64, [UInt64: (reason: DeadLetterReason, at: Double)]) =
            bufferLock.withLock {
                defer { droppedInMemorySinceCommit = 0 }
                return (Array(acknowledged), droppedInMemorySinceCommit, deadLettering)
            }
        // After a quarantine, the rows read from the file set aside go into the fresh one with the next commit.
        let salvaging = pendingSalvage?.fresh == true
        if batch.isEmpty, acks.isEmpty, dropped == 0, dead.isEmpty, !salvaging { return nil }
        do {
            let salvage = salvaging ? pendingSalvage?.salvage : nil
            let range = try writeTransaction(
                batch: batch, acks: acks, droppedInMemory: dropped,
                salvaged: salvage?.rows ?? [],
                salvagedDeadLetters: salvage?.deadLetters ?? [],
                deadLetters: dead, forcePersist: salvaging)
            commits += 1
            ioErrorsInARow = 0
            if salvaging { salvageCommitted() }
            if let range { commitObserver?(range) }
            // Space came back after the reserve was used: hold it again.
            if lastError != nil || reserveReleases > 0 && !ballast.isHeld { ballast.hold() }
            lastError = nil
            bufferLock.withLock {
                acknowledged.subtract(acks)
                for seq in dead.keys { deadLettering[seq] = nil }
            }
            return range
        } catch {
            let failure =
                error as? SpoolError
                ?? SpoolError(.sqlite, path: configuration.path, context: "commit: \(error)")
            if db.inTransaction { try? db.execute("ROLLBACK") }
            // The file is corrupt, or keeps failing to read or write: set it aside, continue on a fresh one with
            // what can be read from it, and commit this batch there.
            if !afterQuarantine, quarantineIfNeeded(failure) {
                bufferLock.withLock { droppedInMemorySinceCommit += dropped }
                return try commitLocked(batch, afterQuarantine: true)
            }
            // The file system is full (something else filled it, or the spool's budget is above what it has): make
            // room for the states by removing the oldest samples in the same transaction; the batch's samples wait.
            if failure.code == .diskFull, batch.contains(where: { $0.readingClass == .state }) {
                if ballast.release() { reserveReleases += 1 }
                if let range = try? commitStatesMakingRoom(batch, acks: acks, dropped: dropped, dead: dead) {
                    commits += 1
                    commitObserver?(range)
                    lastError = nil
                    return range
                }
            }
            failedCommits += 1
            lastError = failure
            // Back in the buffer: an idle `run` (this was an `appendDurably` or a `commit()` of someone else's) retries
            // it at the end of its next window.
            let wakes = bufferLock.withLock {
                droppedInMemorySinceCommit += dropped
                let removed = buffer.restore(batch, maxSamples: configuration.maxBufferedSamples)
                droppedInMemorySinceCommit += UInt64(removed)
                return endsIdleRun()
            }
            if wakes { work.signal() }
            throw failure
        }
    }

    /// After a commit failed for want of space: the batch's states alone, in one transaction that first removes the
    /// oldest samples for twice their size (and at least 64 KiB), counted as dropped. The batch's samples go back to
    /// the buffer and follow the states (their seqs come after). Nil when the batch has no state; throws when even
    /// that does not fit.
    private func commitStatesMakingRoom(
        _ batch: [Reading], acks: [UInt64], dropped: UInt64, dead: [UInt64: (reason: DeadLetterReason, at: Double)]
    ) throws -> ClosedRange<UInt64>? {
        let states = batch.filter { $0.readingClass == .state }
        guard !states.isEmpty else { return nil }
        let samples = batch.filter { $0.readingClass != .state }
        let room = max(64 << 10, 2 * states.reduce(0) { $0 + $1.storedSize })
        do {
            let range = try writeTransaction(
                batch: states, acks: acks, droppedInMemory: dropped, deadLetters: dead,
                makeRoom: room)
            let wakes = bufferLock.withLock {
                acknowledged.subtract(acks)
                for seq in dead.keys { deadLettering[seq] = nil }
                droppedInMemorySinceCommit += UInt64(
                    buffer.restore(samples, maxSamples: configuration.maxBufferedSamples))
                return !samples.isEmpty && endsIdleRun()
            }
            if wakes { work.signal() }
            return range
        } catch {
            if db.inTransaction { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// One transaction: insert the batch with fresh seqs, delete the acknowledged, keep the budget, persist the
    /// ledger. The ledger in memory changes only once COMMIT succeeded.
    @discardableResult
    private func writeTransaction(
        batch: [Reading], acks: [UInt64], droppedInMemory: UInt64, salvaged: [SpooledReading] = [],
        salvagedDeadLetters: [DeadLetter] = [], deadLetters: [UInt64: (reason: DeadLetterReason, at: Double)] = [:],
        forcePersist: Bool = false, makeRoom: Int = 0
    ) throws -> ClosedRange<UInt64>? {
        var next = ledger
        let needed = next.lastSeq + UInt64(batch.count)
        if needed > reservedSeq || forcePersist && reservedSeq < needed + SequenceReservation.block / 2 {
            let ceiling = needed + SequenceReservation.block
            try reservation.write(ceiling)
            reservedSeq = ceiling
        }
        try db.execute("BEGIN IMMEDIATE")
        // Salvaged rows keep their seq; one already here (a salvage resumed after its commit) is left as it is.
        var salvagedInserted = 0
        for spooled in salvaged where try statements.insertIfAbsent(spooled) {
            next.rows += 1
            next.storedBytes += spooled.reading.storedSize
            salvagedInserted += 1
        }
        for letter in salvagedDeadLetters where try statements.insertDeadLetterIfAbsent(letter) {
            next.deadLetters += 1
            next.deadLetterBytes += letter.spooled.reading.storedSize
        }
        // Deletions first: on a full disk the pages they free are what the inserts can use.
        for seq in acks {
            if let size = try statements.delete(seq) {
                next.rows -= 1
                next.storedBytes -= size
            }
        }
        for (seq, why) in deadLetters.sorted(by: { $0.key < $1.key }) {
            guard try statements.copyToDeadLetters(seq, reason: why.reason, at: why.at),
                let size = try statements.delete(seq)
            else { continue }
            next.rows -= 1
            next.storedBytes -= size
            next.deadLetters += 1
            next.deadLetterBytes += size
        }
        if !deadLetters.isEmpty || !salvagedDeadLetters.isEmpty { try keepDeadLetterBound(&next) }
        if makeRoom > 0 { try dropOldestSamples(freeing: makeRoom, &next) }
        let first = next.lastSeq + 1
        for reading in batch {
            next.lastSeq += 1
            try statements.insert(SpooledReading(seq: next.lastSeq, reading: reading))
            next.rows += 1
            next.storedBytes += reading.storedSize
        }
        next.samples.droppedInMemory += droppedInMemory
        try keepBudget(&next)
        // A commit that only inserted leaves MAX(seq) == lastSeq, which is how `Ledger.load` finds the counter: the
        // meta page then need not be rewritten (4 KiB less per commit on the SD card). Any deletion may remove the
        // highest row, so from then on the stored counter is what keeps seq from going back.
        let onlyInserted = next.rows - ledger.rows == batch.count + salvagedInserted
        if forcePersist || !onlyInserted || next.samples != ledger.samples || next.thinHorizon != ledger.thinHorizon {
            try statements.persist(next)
        }
        try db.execute("COMMIT")
        ledger = next
        return batch.isEmpty ? nil : first...next.lastSeq
    }

    /// Above `maxBytes`, frees down to `maxBytes × trimFraction`: first by downsampling samples per topic, oldest
    /// first, from where the last downsampling stopped; then by dropping the oldest samples. States are never
    /// removed, so a spool of states alone stays above budget.
    private func keepBudget(_ next: inout Ledger) throws {
        guard next.storedBytes > configuration.maxBytes else { return }
        let target = Int(Double(configuration.maxBytes) * configuration.trimFraction)
        if configuration.keepOneSampleIn > 1 {
            // As in dropOldestSamples: a row acknowledged but not yet deleted was delivered, not downsampled.
            let delivered = bufferLock.withLock { acknowledged }
            var downsampler = Downsampler(keepOneIn: configuration.keepOneSampleIn)
            thinning: while next.storedBytes > target {
                let candidates = try statements.samples(after: next.thinHorizon, limit: 512)
                if candidates.isEmpty { break }
                for candidate in candidates {
                    next.thinHorizon = candidate.seq
                    guard downsampler.removes(topic: candidate.topic) else { continue }
                    if let size = try statements.delete(UInt64(candidate.seq)) {
                        next.rows -= 1
                        next.storedBytes -= size
                        if !delivered.contains(UInt64(candidate.seq)) { next.samples.downsampled += 1 }
                    }
                    if next.storedBytes <= target { break thinning }
                }
            }
        }
        try dropOldestSamples(freeing: next.storedBytes - target, &next)
    }

    /// Removes the oldest samples until `bytes` (as charged) are freed or none is left; counted as dropped oldest,
    /// unless the broker had acknowledged it already.
    private func dropOldestSamples(freeing bytes: Int, _ next: inout Ledger) throws {
        var freed = 0
        // Acknowledged since this commit took its acks (or since a failed one did): delivered, only not yet deleted.
        // Removing such a row frees its room but drops nothing, so it is not counted (a consumer would find its seq).
        let delivered = bufferLock.withLock { acknowledged }
        dropping: while freed < bytes {
            let oldest = try statements.oldestSamples(limit: 512)
            if oldest.isEmpty { break }
            for seq in oldest {
                if let size = try statements.delete(UInt64(seq)) {
                    next.rows -= 1
                    next.storedBytes -= size
                    if !delivered.contains(UInt64(seq)) { next.samples.droppedOldest += 1 }
                    freed += size
                }
                if freed >= bytes { break dropping }
            }
        }
    }

    // MARK: Publisher

    /// Up to `limit` durable readings with seq > `after`, oldest first (order is seq, never ts), skipping those
    /// acknowledged (or being dead-lettered) but not yet deleted. Fewer than `limit` only at the end of the spool: the
    /// rows skipped are read past, so an empty answer means nothing is left to send. (It once returned the first
    /// `limit` rows minus those skipped: a window of acknowledged rows awaiting the next commit read as the end, and
    /// a quiet gateway left its backlog behind them until something else was committed.) For the publisher's bounded
    /// in-flight window: after a reconnect it starts again from `after: 0`, the oldest unacknowledged reading.
    public func pending(after seq: UInt64 = 0, limit: Int) throws -> [SpooledReading] {
        try databaseLock.withLock {
            let (acked, dead) = bufferLock.withLock { (acknowledged, deadLettering) }
            var out: [SpooledReading] = []
            var after = seq
            // Each pass reads past the rows it skips; at most (acknowledged + dead-lettering) / limit extra passes.
            while out.count < limit {
                let rows: [SpooledReading]
                do {
                    rows = try statements.readings(after: after, limit: limit)
                } catch let failure as SpoolError where quarantineIfNeeded(failure) {
                    // Continued on a fresh file: the salvaged rows go in first, then are read from there.
                    let batch = bufferLock.withLock { buffer.takeAll() }
                    _ = try commitLocked(batch, afterQuarantine: true)
                    rows = try statements.readings(after: after, limit: limit)
                }
                out += rows.lazy.filter { !acked.contains($0.seq) && dead[$0.seq] == nil }.prefix(limit - out.count)
                guard rows.count == limit, let last = rows.last else { break }
                after = last.seq
            }
            return out
        }
    }

    /// Marks readings as delivered; they are deleted with the next commit (one fsync for both). A crash before it
    /// replays them: delivery is at least once, and `seq` lets the consumer drop duplicates.
    public func acknowledge<S: Sequence>(_ seqs: S) where S.Element == UInt64 {
        let wakes = bufferLock.withLock {
            acknowledged.formUnion(seqs)
            return !acknowledged.isEmpty && endsIdleRun()
        }
        if wakes { work.signal() }
    }

    // MARK: Statistics

    public var statistics: SpoolStatistics {
        databaseLock.withLock {
            let (buffered, acked, inMemory) = bufferLock.withLock {
                (buffer.count, acknowledged.count, droppedInMemorySinceCommit)
            }
            var samples = ledger.samples
            samples.droppedInMemory += inMemory
            return SpoolStatistics(
                depth: max(0, ledger.rows - acked), buffered: buffered, storedBytes: ledger.storedBytes,
                bytesOnDisk: Spool.fileSize(configuration.path) + Spool.fileSize(configuration.path + "-wal"),
                lastSeq: ledger.lastSeq, drops: [.sample: samples, .state: refusedStateCounters], commits: commits,
                failedCommits: failedCommits, lastError: lastError, openReport: openReport,
                reserveReleases: reserveReleases, deadLetters: ledger.deadLetters,
                deadLetterBytes: ledger.deadLetterBytes,
                deadLettersEvicted: ledger.deadLettersEvicted, quarantines: quarantines, lastQuarantine: lastQuarantine
            )
        }
    }

    private static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}
