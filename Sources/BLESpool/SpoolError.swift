/// A spool failure, as a value: what went wrong (`code`), the SQLite result code when SQLite said so, the file, and
/// what the spool was doing. The description names all of them, e.g.
/// `spool /var/lib/blegateway/spool.db: disk full during commit (SQLite 13 SQLITE_FULL: database or disk is full)`.
public struct SpoolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; an open set like the wire codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// SQLite failed in a way none of the codes below describes; see `sqlite`.
        public static let sqlite = Code(rawValue: 1)
        /// SQLITE_FULL: the device is out of space (ENOSPC) or `max_page_count` was reached. Nothing was written:
        /// the transaction rolled back and the readings stay buffered (bounded) until space returns.
        public static let diskFull = Code(rawValue: 2)
        /// The file is not a readable database (SQLITE_CORRUPT, SQLITE_NOTADB, or a failed `quick_check`).
        public static let corrupt = Code(rawValue: 3)
        /// The in-memory buffer holds `SpoolConfiguration.maxBufferedStates` state events already (the disk has
        /// been failing): the state event was NOT taken; the producer still owns it.
        public static let bufferFull = Code(rawValue: 4)
        /// A file-system call outside SQLite failed (rename, the sequence reservation file); see `errno`.
        public static let fileSystem = Code(rawValue: 5)

        public var description: String {
            switch self {
            case .sqlite: "SQLite error"
            case .diskFull: "disk full"
            case .corrupt: "corrupt spool file"
            case .bufferFull: "in-memory buffer full"
            case .fileSystem: "file-system error"
            default: "spool error \(rawValue)"
            }
        }
    }

    public let code: Code
    /// The SQLite result code, when the failure came from SQLite.
    public let sqlite: SQLiteResultCode?
    /// The errno of a failed file-system call.
    public let errno: Int32?
    /// The file concerned.
    public let path: String
    /// What the spool was doing ("commit", "open", "moving the corrupt file aside"…), and SQLite's own message.
    public let context: String

    init(_ code: Code, path: String, context: String, sqlite: SQLiteResultCode? = nil, errno: Int32? = nil) {
        self.code = code
        self.sqlite = sqlite
        self.errno = errno
        self.path = path
        self.context = context
    }

    public var description: String {
        var text = "spool \(path): \(code) during \(context)"
        if let sqlite { text += " (\(sqlite))" }
        if let errno { text += " (errno \(errno))" }
        return text
    }
}
