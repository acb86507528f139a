/// What the spool removed of one class, cumulative across restarts (persisted with each commit), for publishing.
public struct DropCounters: Sendable, Hashable {
    /// Removed by downsampling (one kept in `keepOneSampleIn` per topic).
    public var downsampled: UInt64 = 0
    /// Removed oldest first from the file when downsampling was not enough.
    public var droppedOldest: UInt64 = 0
    /// Removed from the in-memory buffer while commits were failing (never committed, so they had no seq).
    public var droppedInMemory: UInt64 = 0

    public init() {}

    public var total: UInt64 { downsampled + droppedOldest + droppedInMemory }
}

/// A snapshot of the spool, for the gateway's health topic.
public struct SpoolStatistics: Sendable, Hashable {
    /// Durable readings not yet acknowledged.
    public var depth: Int
    /// Readings appended but not yet committed.
    public var buffered: Int
    /// Bytes charged against `maxBytes` by the durable readings.
    public var storedBytes: Int
    /// The database file plus its WAL, as the file system reports them.
    public var bytesOnDisk: Int
    /// The last seq assigned (0 before the first).
    public var lastSeq: UInt64
    /// Per class; `.state` stays all zero by design (state events are never dropped), reported so that every class
    /// publishes the same shape.
    public var drops: [ReadingClass: DropCounters]
    /// Successful commits since open.
    public var commits: UInt64
    /// Failed commits since open.
    public var failedCommits: UInt64
    /// The last failure, cleared by the next successful commit.
    public var lastError: SpoolError?
    /// What happened at open (a corrupt file set aside, rows salvaged).
    public var openReport: SpoolOpenReport
    /// Readings kept in the dead-letter table (the broker can never take them), their bytes, and how many the
    /// table's bound evicted since the spool was made.
    /// Times the reserve (`SpoolConfiguration.reserveBytes`) was released for a state on a full file system.
    public var reserveReleases: UInt64 = 0
    public var deadLetters = 0
    public var deadLetterBytes = 0
    public var deadLettersEvicted: UInt64 = 0
    /// Files found corrupt (or failing I/O) while running, set aside and replaced by a fresh file holding what could
    /// be read from them; the last one's report.
    public var quarantines: UInt64 = 0
    public var lastQuarantine: SpoolOpenReport?
}

/// What `Spool.init` found and did. Its description is the log line, e.g. `spool /data/spool.db: corrupt spool file
/// during open: quick_check: …; moved aside to /data/spool.db.corrupt-20261121T061500Z; salvaged 1914 readings`.
public struct SpoolOpenReport: Sendable, Hashable, CustomStringConvertible {
    /// Why the previous file could not be used, when it could not.
    public var corruption: SpoolError?
    /// Where the unusable file (and its WAL) were moved: `<path>.corrupt-<UTC timestamp>`.
    public var movedAsideTo: String?
    /// Readings copied from the moved file into the new spool, with their original seq.
    public var salvagedReadings: Int = 0
    /// Dead letters copied likewise, with their seq, reason and time.
    public var salvagedDeadLetters: Int = 0
    /// The first seq the new spool issues was taken from the reservation file because the old file's counter was
    /// unreadable.
    public var seqFromReservation: Bool = false
    /// A salvage a crash had cut short, finished at this open: the set-aside file it read.
    public var resumedSalvageOf: String?
    /// Corrupt files set aside and kept (`SpoolConfiguration.maxSetAsideFiles`), their bytes, and how many older ones
    /// this open removed.
    public var setAsideFiles = 0
    public var setAsideBytes = 0
    public var setAsideRemoved = 0
    /// Readings the file held that the salvage could not read (known for a file set aside while running, whose row
    /// count the spool kept): lost to the corruption, counted.
    public var lostReadings = 0

    public init() {}

    public var description: String {
        var text: String
        if let corruption {
            text = "\(corruption)"
        } else if let resumedSalvageOf {
            text = "resumed the salvage of \(resumedSalvageOf) that a crash interrupted"
        } else {
            return seqFromReservation ? "new spool; seq continues from the reservation" : "ok"
        }
        if let movedAsideTo { text += "; moved aside to \(movedAsideTo)" }
        text += "; salvaged \(salvagedReadings) readings"
        if salvagedDeadLetters > 0 { text += " and \(salvagedDeadLetters) dead letters" }
        if lostReadings > 0 { text += "; \(lostReadings) unreadable, lost" }
        if seqFromReservation { text += "; seq continues from the reservation" }
        if setAsideRemoved > 0 { text += "; removed \(setAsideRemoved) older set-aside file(s)" }
        return text
    }
}
