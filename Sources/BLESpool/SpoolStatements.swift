/// What the spool keeps about itself, persisted in `meta` with every commit.
struct Ledger {
    var lastSeq: UInt64 = 0
    /// Sum of `size` over the rows.
    var storedBytes = 0
    var rows = 0
    /// Samples up to this seq have been downsampled once.
    var thinHorizon: Int64 = 0
    var samples = DropCounters()
    /// Rows in `dead_letters`, the sum of their `size`, and how many the bound evicted (persisted).
    var deadLetters = 0
    var deadLetterBytes = 0
    var deadLettersEvicted: UInt64 = 0

    /// Reads the ledger; `counterWasStored` is false for a spool that never committed (new, or replacing a lost one).
    static func load(_ db: SQLiteConnection) throws -> (ledger: Ledger, counterWasStored: Bool) {
        var meta: [String: Int64] = [:]
        let s = try db.prepare("SELECT key, value FROM meta")
        while try s.step() { meta[s.text(0)] = s.int64(1) }
        var ledger = Ledger()
        let maxSeq = max(
            try db.int64("SELECT MAX(seq) FROM readings") ?? 0,
            try db.int64("SELECT MAX(seq) FROM dead_letters") ?? 0)
        ledger.lastSeq = UInt64(max(0, max(maxSeq, meta[SpoolSchema.Key.lastSeq] ?? 0)))
        ledger.rows = Int(try db.int64("SELECT COUNT(*) FROM readings") ?? 0)
        ledger.storedBytes = Int(try db.int64("SELECT COALESCE(SUM(size), 0) FROM readings") ?? 0)
        ledger.thinHorizon = meta[SpoolSchema.Key.thinHorizon] ?? 0
        ledger.samples = DropCounters(meta: meta)
        ledger.deadLetters = Int(try db.int64("SELECT COUNT(*) FROM dead_letters") ?? 0)
        ledger.deadLetterBytes = Int(try db.int64("SELECT COALESCE(SUM(size), 0) FROM dead_letters") ?? 0)
        ledger.deadLettersEvicted = UInt64(max(0, meta[SpoolSchema.Key.deadLettersEvicted] ?? 0))
        return (ledger, meta[SpoolSchema.Key.lastSeq] != nil)
    }
}

extension DropCounters {
    init(meta: [String: Int64]) {
        self.init()
        downsampled = UInt64(max(0, meta[SpoolSchema.Key.downsampled] ?? 0))
        droppedOldest = UInt64(max(0, meta[SpoolSchema.Key.droppedOldest] ?? 0))
        droppedInMemory = UInt64(max(0, meta[SpoolSchema.Key.droppedInMemory] ?? 0))
    }
}

/// The prepared statements of one connection, prepared once (SQLITE_PREPARE_PERSISTENT).
final class Statements {
    private let insertRow: SQLiteStatement
    private let insertOrIgnoreRow: SQLiteStatement
    private let selectAfter: SQLiteStatement
    private let deleteRow: SQLiteStatement
    private let samplesAfter: SQLiteStatement
    private let oldestSamples: SQLiteStatement
    private let putMeta: SQLiteStatement
    private let moveToDeadLetters: SQLiteStatement
    private let selectDeadLetters: SQLiteStatement
    private let requeueRow: SQLiteStatement
    private let deleteDeadLetterRow: SQLiteStatement
    private let oldestDeadLetter: SQLiteStatement
    private let insertDeadLetter: SQLiteStatement

    init(_ db: SQLiteConnection) throws {
        insertRow = try db.prepare(SpoolSchema.insert)
        insertOrIgnoreRow = try db.prepare(
            SpoolSchema.insert.replacingOccurrences(of: "INSERT INTO", with: "INSERT OR IGNORE INTO"))
        selectAfter = try db.prepare(SpoolSchema.selectAfter)
        deleteRow = try db.prepare(SpoolSchema.deleteReturningSize)
        samplesAfter = try db.prepare(SpoolSchema.samplesAfter)
        oldestSamples = try db.prepare(SpoolSchema.oldestSamples)
        putMeta = try db.prepare(SpoolSchema.putMeta)
        moveToDeadLetters = try db.prepare(SpoolSchema.moveToDeadLetters)
        selectDeadLetters = try db.prepare(SpoolSchema.deadLetters)
        requeueRow = try db.prepare(SpoolSchema.requeue)
        deleteDeadLetterRow = try db.prepare(SpoolSchema.deleteDeadLetter)
        oldestDeadLetter = try db.prepare(SpoolSchema.oldestDeadLetter)
        insertDeadLetter = try db.prepare(SpoolSchema.insertDeadLetterIfAbsent)
    }

    func insert(_ spooled: SpooledReading) throws { try bindAndRun(insertRow, spooled) }

    /// Inserts unless a row with that seq exists; true when it inserted.
    func insertIfAbsent(_ spooled: SpooledReading) throws -> Bool {
        try bindAndRun(insertOrIgnoreRow, spooled)
        return insertOrIgnoreRow.changes > 0
    }

    /// Inserts a dead letter unless one with that seq exists; true when it inserted.
    func insertDeadLetterIfAbsent(_ letter: DeadLetter) throws -> Bool {
        bind(insertDeadLetter, letter.spooled)
        insertDeadLetter.bind(12, Int64(letter.reason.code))
        insertDeadLetter.bind(13, letter.reason.name)
        insertDeadLetter.bind(14, letter.at)
        try insertDeadLetter.run()
        return insertDeadLetter.changes > 0
    }

    private func bindAndRun(_ s: SQLiteStatement, _ spooled: SpooledReading) throws {
        bind(s, spooled)
        try s.run()
    }

    /// Resets `s` and binds a reading's columns and charged size to parameters 1–11.
    private func bind(_ s: SQLiteStatement, _ spooled: SpooledReading) {
        let r = spooled.reading
        s.reset()
        s.bind(1, Int64(bitPattern: spooled.seq))
        s.bind(2, Int64(r.readingClass.rawValue))
        s.bind(3, r.topic)
        s.bind(4, r.body)
        s.bind(5, Int64(r.qos))
        s.bind(6, Int64(r.retain ? 1 : 0))
        s.bind(7, r.ts)
        s.bind(8, Int64(r.clockSynchronized ? 1 : 0))
        s.bind(9, r.expiry)
        s.bind(10, r.run)
        s.bind(11, Int64(r.storedSize))
    }

    /// Deletes one row; returns its charged size, or nil when it was not there (already dropped or deleted).
    func delete(_ seq: UInt64) throws -> Int? {
        let s = deleteRow
        s.reset()
        s.bind(1, Int64(bitPattern: seq))
        defer { s.reset() }
        guard try s.step() else { return nil }
        let size = Int(s.int64(0))
        while try s.step() {}
        return size
    }

    func readings(after seq: UInt64, limit: Int) throws -> [SpooledReading] {
        let s = selectAfter
        s.reset()
        defer { s.reset() }
        s.bind(1, Int64(bitPattern: seq))
        s.bind(2, Int64(limit))
        var out: [SpooledReading] = []
        out.reserveCapacity(min(limit, 4096))
        while try s.step() { out.append(Statements.reading(s)) }
        return out
    }

    /// Decodes a row selected as `SpoolSchema.columns`.
    static func reading(_ s: SQLiteStatement) -> SpooledReading {
        let reading = Reading(
            ReadingClass(rawValue: UInt8(truncatingIfNeeded: s.int64(1))), topic: s.text(2), body: s.blob(3),
            qos: UInt8(truncatingIfNeeded: s.int64(4)), retain: s.int64(5) != 0, ts: s.double(6),
            clockSynchronized: s.int64(7) != 0, expiry: s.optionalDouble(8), run: s.text(9)
        )
        return SpooledReading(seq: UInt64(bitPattern: s.int64(0)), reading: reading)
    }

    func samples(after seq: Int64, limit: Int) throws -> [(seq: Int64, topic: String, size: Int)] {
        let s = samplesAfter
        s.reset()
        defer { s.reset() }
        s.bind(1, seq)
        s.bind(2, Int64(limit))
        var out: [(seq: Int64, topic: String, size: Int)] = []
        while try s.step() { out.append((s.int64(0), s.text(1), Int(s.int64(2)))) }
        return out
    }

    func oldestSamples(limit: Int) throws -> [Int64] {
        let s = oldestSamples
        s.reset()
        defer { s.reset() }
        s.bind(1, Int64(limit))
        var out: [Int64] = []
        while try s.step() { out.append(s.int64(0)) }
        return out
    }

    func persist(_ ledger: Ledger) throws {
        let values: [(String, Int64)] = [
            (SpoolSchema.Key.lastSeq, Int64(bitPattern: ledger.lastSeq)),
            (SpoolSchema.Key.thinHorizon, ledger.thinHorizon),
            (SpoolSchema.Key.downsampled, Int64(bitPattern: ledger.samples.downsampled)),
            (SpoolSchema.Key.droppedOldest, Int64(bitPattern: ledger.samples.droppedOldest)),
            (SpoolSchema.Key.droppedInMemory, Int64(bitPattern: ledger.samples.droppedInMemory)),
            (SpoolSchema.Key.deadLettersEvicted, Int64(bitPattern: ledger.deadLettersEvicted)),
        ]
        for (key, value) in values {
            putMeta.reset()
            putMeta.bind(1, key)
            putMeta.bind(2, value)
            try putMeta.run()
        }
    }

    // MARK: Dead letters

    /// Copies a reading into `dead_letters` (the caller deletes it from `readings`); false when it was not there.
    func copyToDeadLetters(_ seq: UInt64, reason: DeadLetterReason, at: Double) throws -> Bool {
        let s = moveToDeadLetters
        s.reset()
        s.bind(1, Int64(bitPattern: seq))
        s.bind(2, Int64(reason.code))
        s.bind(3, reason.name)
        s.bind(4, at)
        try s.run()
        return s.changes > 0
    }

    func deadLetters(after seq: UInt64, limit: Int) throws -> [DeadLetter] {
        let s = selectDeadLetters
        s.reset()
        defer { s.reset() }
        s.bind(1, Int64(bitPattern: seq))
        s.bind(2, Int64(limit))
        var out: [DeadLetter] = []
        while try s.step() { out.append(Statements.deadLetter(s)) }
        return out
    }

    /// The current row of a `SELECT <columns>, reason, reason_name, at FROM dead_letters`.
    static func deadLetter(_ s: SQLiteStatement) -> DeadLetter {
        DeadLetter(
            spooled: reading(s), reason: DeadLetterReason(code: Int(s.int64(10)), name: s.text(11)),
            at: s.double(12))
    }

    /// Copies a dead letter back into `readings` with its seq; false when it was not there.
    func copyToReadings(_ seq: UInt64) throws -> Bool {
        let s = requeueRow
        s.reset()
        s.bind(1, Int64(bitPattern: seq))
        try s.run()
        return s.changes > 0
    }

    func deleteDeadLetter(_ seq: UInt64) throws -> Int? {
        let s = deleteDeadLetterRow
        s.reset()
        s.bind(1, Int64(bitPattern: seq))
        defer { s.reset() }
        guard try s.step() else { return nil }
        let size = Int(s.int64(0))
        while try s.step() {}
        return size
    }

    func oldestDeadLetterSeq() throws -> UInt64? {
        let s = oldestDeadLetter
        s.reset()
        defer { s.reset() }
        return try s.step() ? UInt64(bitPattern: s.int64(0)) : nil
    }
}
