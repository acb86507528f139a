import CSQLite

/// An SQLite result code (https://sqlite.org/rescode.html), kept open: codes this file does not name print by
/// number. `primary` strips the extended bits, so `SQLITE_IOERR_WRITE` (778) is an `ioError`.
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let ok = SQLiteResultCode(rawValue: 0)
    public static let error = SQLiteResultCode(rawValue: 1)
    public static let permission = SQLiteResultCode(rawValue: 3)
    public static let busy = SQLiteResultCode(rawValue: 5)
    public static let locked = SQLiteResultCode(rawValue: 6)
    public static let noMemory = SQLiteResultCode(rawValue: 7)
    public static let readOnly = SQLiteResultCode(rawValue: 8)
    public static let ioError = SQLiteResultCode(rawValue: 10)
    public static let corrupt = SQLiteResultCode(rawValue: 11)
    public static let full = SQLiteResultCode(rawValue: 13)
    public static let cannotOpen = SQLiteResultCode(rawValue: 14)
    public static let constraint = SQLiteResultCode(rawValue: 19)
    public static let notADatabase = SQLiteResultCode(rawValue: 26)
    public static let row = SQLiteResultCode(rawValue: 100)
    public static let done = SQLiteResultCode(rawValue: 101)

    private static let names: [Int32: String] = [
        0: "SQLITE_OK", 1: "SQLITE_ERROR", 3: "SQLITE_PERM", 5: "SQLITE_BUSY", 6: "SQLITE_LOCKED",
        7: "SQLITE_NOMEM", 8: "SQLITE_READONLY", 10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 13: "SQLITE_FULL",
        14: "SQLITE_CANTOPEN", 19: "SQLITE_CONSTRAINT", 26: "SQLITE_NOTADB", 100: "SQLITE_ROW", 101: "SQLITE_DONE",
    ]

    /// The primary code (low 8 bits) of an extended result code.
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xFF) }

    /// True for the codes that mean "the file is not a readable database": the spool is moved aside.
    public var meansCorruption: Bool { primary == .corrupt || primary == .notADatabase }

    /// True when the device (or `max_page_count`) has no room left.
    public var meansFull: Bool { primary == .full }

    public var description: String {
        let name = Self.names[rawValue] ?? Self.names[primary.rawValue].map { "\($0) (extended \(rawValue))" }
        let text = String(cString: sqlite3_errstr(rawValue))
        return "SQLite \(rawValue) \(name ?? "unknown code"): \(text)"
    }
}
