import Foundation

/// What can still be read from a spool file that SQLite called corrupt. The file itself is never modified: it is
/// renamed aside, and the salvage reads a scratch copy (opening a WAL database may write to it).
struct SpoolSalvage {
    /// Readable rows, ascending seq.
    var rows: [SpooledReading] = []
    /// The highest seq known to have been issued (the stored counter, else the highest row).
    var lastSeq: UInt64 = 0
    var counters = DropCounters()

    /// Renames `path` and its `-wal`/`-journal`/`-shm` to `<path>.corrupt-<UTC timestamp>[-n]`; returns that name.
    static func moveAside(_ path: String) throws -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        let stamp = String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec
        )
        var aside = "\(path).corrupt-\(stamp)"
        var n = 1
        while FileManager.default.fileExists(atPath: aside) {
            n += 1
            aside = "\(path).corrupt-\(stamp)-\(n)"
        }
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
        var found: [UInt64: SpooledReading] = [:]
        for order in ["ASC", "DESC"] {
            guard let s = try? db.prepare("SELECT \(SpoolSchema.columns) FROM readings ORDER BY seq \(order)") else {
                continue
            }
            while (try? s.step()) == true {
                let row = Statements.reading(s)
                if found[row.seq] != nil { break }  // reached what the other direction read
                found[row.seq] = row
            }
        }
        salvage.rows = found.values.sorted { $0.seq < $1.seq }
        var meta: [String: Int64] = [:]
        if let s = try? db.prepare("SELECT key, value FROM meta") {
            while (try? s.step()) == true { meta[s.text(0)] = s.int64(1) }
        }
        salvage.counters = DropCounters(meta: meta)
        salvage.lastSeq = max(salvage.rows.last?.seq ?? 0, UInt64(max(0, meta[SpoolSchema.Key.lastSeq] ?? 0)))
    }
}
