import Foundation

/// What can still be read from a spool file that SQLite called corrupt. The file itself is never modified: it is
/// renamed aside, and the salvage reads a scratch copy (opening a WAL database may write to it).
struct SpoolSalvage {
    /// Readable rows, ascending seq.
    var rows: [SpooledReading] = []
    /// Its dead letters, kept as they were (seq, reason, when): an operator's to requeue, not the salvage's to drop.
    var deadLetters: [DeadLetter] = []
    /// The highest seq known to have been issued (the stored counter, else the highest row).
    var lastSeq: UInt64 = 0
    var counters = DropCounters()

    /// `<path>.salvaging`: written (durably) before a corrupt file is moved aside, naming where it goes, and removed
    /// once its rows are committed in the new spool. Found at start, it means a salvage was interrupted (a crash or a
    /// power cut between the two): the start resumes it.
    static func markerPath(_ path: String) -> String { path + ".salvaging" }

    /// The aside file an interrupted salvage left to finish, if any.
    static func interrupted(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: markerPath(path)),
            let aside = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            aside.hasPrefix(path + ".corrupt-"), FileManager.default.fileExists(atPath: aside)
        else { return nil }
        return aside
    }

    /// The salvage is committed: the marker goes.
    static func finished(_ path: String) { unlink(markerPath(path)) }

    /// Adds what another set-aside file held (a file found corrupt again while a salvage was being resumed).
    mutating func merge(_ other: SpoolSalvage) {
        var bySeq = Dictionary(rows.map { ($0.seq, $0) }, uniquingKeysWith: { a, _ in a })
        for r in other.rows where bySeq[r.seq] == nil { bySeq[r.seq] = r }
        rows = bySeq.values.sorted { $0.seq < $1.seq }
        var letters = Dictionary(deadLetters.map { ($0.spooled.seq, $0) }, uniquingKeysWith: { a, _ in a })
        for d in other.deadLetters where letters[d.spooled.seq] == nil { letters[d.spooled.seq] = d }
        deadLetters = letters.values.sorted { $0.spooled.seq < $1.spooled.seq }
        lastSeq = max(lastSeq, other.lastSeq)
        if other.counters.total > counters.total { counters = other.counters }
    }

    /// Renames `path` and its `-wal`/`-journal`/`-shm` to `<path>.corrupt-<UTC timestamp>[-n]`; returns that name.
    /// The marker naming it is made durable first, so that a salvage cut short is finished at the next start.
    static func moveAside(_ path: String) throws -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        let stamp = String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec
        )
        // Within one second, numbered above every file of that second still there (older ones may have been
        // removed by `prune`, whose order this name must keep).
        let directory =
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let sameSecond = (path as NSString).lastPathComponent + ".corrupt-\(stamp)"
        let taken = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap {
            name -> Int? in
            guard name.hasPrefix(sameSecond) else { return nil }
            let rest = name.dropFirst(sameSecond.count)
            if rest.isEmpty || rest == "-wal" || rest == "-journal" || rest == "-shm" { return 1 }
            return rest.hasPrefix("-") ? Int(rest.dropFirst().prefix { $0.isNumber }) : nil
        }
        let n = (taken.max() ?? 0) + 1
        let aside = n == 1 ? "\(path).corrupt-\(stamp)" : "\(path).corrupt-\(stamp)-\(n)"
        try DurableWrite.replace(markerPath(path), with: Array(aside.utf8))
        for suffix in ["", "-wal", "-journal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, aside + suffix) == 0 else {
                let code = errno
                throw SpoolError(
                    .fileSystem, path: path + suffix, context: "moving the corrupt spool aside", errno: code
                )
            }
        }
        return aside
    }

    /// Keeps at most `count` set-aside files (`<path>.corrupt-*`, with their WAL) and `bytes` of them, removing the
    /// oldest first; returns how many it removed and what is left (count, bytes).
    static func prune(_ path: String, keep count: Int, bytes: Int) -> (removed: Int, left: Int, leftBytes: Int) {
        let directory =
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent + ".corrupt-"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter {
                $0.hasPrefix(base) && !$0.hasSuffix("-wal") && !$0.hasSuffix("-journal") && !$0.hasSuffix("-shm")
                    && !$0.hasSuffix(".salvage")
            }
        func size(_ file: String) -> Int {
            var st = stat()
            return ["", "-wal"].reduce(0) { $0 + (stat(file + $1, &st) == 0 ? Int(st.st_size) : 0) }
        }
        // Oldest first: the UTC timestamp in the name, then the -n of files set aside within the same second.
        func key(_ name: String) -> (String, Int) {
            let stamp = name.dropFirst(base.count)
            guard let dash = stamp.firstIndex(of: "-"), let n = Int(stamp[stamp.index(after: dash)...]) else {
                return (String(stamp), 1)
            }
            return (String(stamp[..<dash]), n)
        }
        var files = names.sorted { key($0) < key($1) }.map { directory + "/" + $0 }.map { ($0, size($0)) }
        var removed = 0
        while files.count > count || files.reduce(0, { $0 + $1.1 }) > bytes && files.count > 1 {
            let (oldest, _) = files.removeFirst()
            for suffix in ["", "-wal", "-journal", "-shm"] { unlink(oldest + suffix) }
            removed += 1
        }
        return (removed, files.count, files.reduce(0) { $0 + $1.1 })
    }

    /// Reads what it can: rows forwards from the start until the first unreadable page, then backwards from the end
    /// until the same (so one bad page in the middle costs only the rows on it), and the `meta` counters.
    static func read(_ aside: String) -> SpoolSalvage {
        var salvage = SpoolSalvage()
        let scratch = aside + ".salvage"
        defer {
            for suffix in ["", "-wal", "-journal", "-shm"] { unlink(scratch + suffix) }
        }
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: aside + suffix) {
            try? FileManager.default.removeItem(atPath: scratch + suffix)
            guard (try? FileManager.default.copyItem(atPath: aside + suffix, toPath: scratch + suffix)) != nil else {
                return salvage
            }
        }
        // In its own function so that the connection is closed before the scratch files are removed.
        readRows(scratch, into: &salvage)
        return salvage
    }

    private static func readRows(_ scratch: String, into salvage: inout SpoolSalvage) {
        guard let db = try? SQLiteConnection(path: scratch) else { return }
        _ = try? db.execute("PRAGMA locking_mode = EXCLUSIVE")
        salvage.rows = readBothWays(db, "SELECT \(SpoolSchema.columns) FROM readings", Statements.reading, \.seq)
        salvage.deadLetters = readBothWays(
            db, "SELECT \(SpoolSchema.columns), reason, reason_name, at FROM dead_letters", Statements.deadLetter,
            \.spooled.seq)
        var meta: [String: Int64] = [:]
        if let s = try? db.prepare("SELECT key, value FROM meta") {
            while (try? s.step()) == true { meta[s.text(0)] = s.int64(1) }
        }
        salvage.counters = DropCounters(meta: meta)
        salvage.lastSeq = max(
            salvage.rows.last?.seq ?? 0, salvage.deadLetters.last?.spooled.seq ?? 0,
            UInt64(max(0, meta[SpoolSchema.Key.lastSeq] ?? 0)))
    }

    /// The rows of `select` forwards from the first until the first unreadable page, then backwards from the last
    /// until the same or what the forward pass read; sorted by seq.
    private static func readBothWays<Row>(
        _ db: SQLiteConnection, _ select: String, _ row: (SQLiteStatement) -> Row, _ seq: KeyPath<Row, UInt64>
    ) -> [Row] {
        var found: [UInt64: Row] = [:]
        for order in ["ASC", "DESC"] {
            guard let s = try? db.prepare("\(select) ORDER BY seq \(order)") else { continue }
            while (try? s.step()) == true {
                let r = row(s)
                if found[r[keyPath: seq]] != nil { break }  // reached what the other direction read
                found[r[keyPath: seq]] = r
            }
        }
        return found.values.sorted { $0[keyPath: seq] < $1[keyPath: seq] }
    }
}
