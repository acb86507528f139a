/// The spool's tables and pragmas, in one place.
enum SpoolSchema {
    /// `seq` is given explicitly from `meta.last_seq` (our own persisted counter: AUTOINCREMENT semantics without
    /// its per-row `sqlite_sequence` update), so it is never reused even after the table empties.
    /// `size` is what the row is charged against the budget (`Reading.storedSize`).
    static let create = """
        CREATE TABLE IF NOT EXISTS readings(
            seq INTEGER PRIMARY KEY,
            class INTEGER NOT NULL,
            topic TEXT NOT NULL,
            body BLOB NOT NULL,
            qos INTEGER NOT NULL,
            retain INTEGER NOT NULL,
            ts REAL NOT NULL,
            synced INTEGER NOT NULL,
            expiry REAL,
            run TEXT NOT NULL,
            size INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS dead_letters(
            seq INTEGER PRIMARY KEY,
            class INTEGER NOT NULL,
            topic TEXT NOT NULL,
            body BLOB NOT NULL,
            qos INTEGER NOT NULL,
            retain INTEGER NOT NULL,
            ts REAL NOT NULL,
            synced INTEGER NOT NULL,
            expiry REAL,
            run TEXT NOT NULL,
            size INTEGER NOT NULL,
            reason INTEGER NOT NULL,
            reason_name TEXT NOT NULL,
            at REAL NOT NULL
        );
        """

    static let columns = "seq, class, topic, body, qos, retain, ts, synced, expiry, run"
    static let insert = "INSERT INTO readings(\(columns), size) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    static let selectAfter = "SELECT \(columns) FROM readings WHERE seq > ? ORDER BY seq LIMIT ?"
    static let deleteReturningSize = "DELETE FROM readings WHERE seq = ? RETURNING size"
    static let samplesAfter = "SELECT seq, topic, size FROM readings WHERE class = 1 AND seq > ? ORDER BY seq LIMIT ?"
    static let oldestSamples = "SELECT seq, size FROM readings WHERE class = 1 ORDER BY seq LIMIT ?"
    /// A reading the broker can never take moves, whole and with its seq, to `dead_letters` (docs/SPOOL.md).
    static let moveToDeadLetters = """
        INSERT OR REPLACE INTO dead_letters(\(columns), size, reason, reason_name, at)
        SELECT \(columns), size, ?2, ?3, ?4 FROM readings WHERE seq = ?1
        """
    static let deadLetters =
        "SELECT \(columns), reason, reason_name, at FROM dead_letters WHERE seq > ? ORDER BY seq LIMIT ?"
    /// A dead letter read from a file set aside goes into the fresh one whole, with its seq and why.
    static let insertDeadLetterIfAbsent = """
        INSERT OR IGNORE INTO dead_letters(\(columns), size, reason, reason_name, at)
        VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    static let requeue =
        "INSERT OR IGNORE INTO readings(\(columns), size) SELECT \(columns), size FROM dead_letters WHERE seq = ?"
    static let deleteDeadLetter = "DELETE FROM dead_letters WHERE seq = ? RETURNING size"
    static let oldestDeadLetter = "SELECT seq FROM dead_letters ORDER BY seq LIMIT 1"
    static let putMeta =
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"

    enum Key {
        static let lastSeq = "last_seq"
        static let thinHorizon = "thin_horizon"
        static let downsampled = "samples_downsampled"
        static let droppedOldest = "samples_dropped_oldest"
        static let droppedInMemory = "samples_dropped_in_memory"
        static let deadLettersEvicted = "dead_letters_evicted"
    }

    /// Opens `path` the way the spool needs it. EXCLUSIVE locking first: the spool is the file's one owner, and in
    /// exclusive mode WAL keeps its index in heap memory instead of a mmapped `-shm` (a mmapped file on a full
    /// tmpfs can SIGBUS instead of failing cleanly; https://sqlite.org/wal.html#noshm).
    static func configure(_ db: SQLiteConnection, _ configuration: SpoolConfiguration) throws {
        try db.execute("PRAGMA locking_mode = EXCLUSIVE")
        let mode = try db.text("PRAGMA journal_mode = WAL")
        guard mode?.lowercased() == "wal" else {
            throw SpoolError(.sqlite, path: db.path, context: "PRAGMA journal_mode = WAL answered \(mode ?? "nothing")")
        }
        try db.execute("PRAGMA synchronous = \(configuration.durability.rawValue)")
        // Bounds the WAL left on disk after a checkpoint (it is otherwise kept at its largest size).
        try db.execute("PRAGMA journal_size_limit = \(4 << 20)")
        if let pages = configuration.maxPageCount { _ = try db.text("PRAGMA max_page_count = \(pages)") }
    }

    /// `PRAGMA quick_check`: nil when the file is sound, else SQLite's first complaint.
    static func verify(_ db: SQLiteConnection) throws -> String? {
        let check = try db.prepare("PRAGMA quick_check(4)")
        var lines: [String] = []
        while try check.step() { lines.append(check.text(0)) }
        return lines == ["ok"] ? nil : lines.isEmpty ? "quick_check returned nothing" : lines.joined(separator: "; ")
    }
}
