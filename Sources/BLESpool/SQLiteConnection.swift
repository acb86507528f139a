import CSQLite

/// `SQLITE_TRANSIENT`: SQLite copies bound bytes before `bind` returns (the C macro is not imported).
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One `sqlite3*`. Not Sendable: the `Spool` owns exactly one and touches it only under its lock.
/// Package access so the fleet service keeps its history in SQLite without importing CSQLite (one module owns it).
package final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String

    /// Opens (and creates, unless `readOnly`) the file. Full-mutex mode is not needed: one owner, one lock.
    package init(path: String, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let code = SQLiteResultCode(rawValue: rc)
            if let db { sqlite3_close_v2(db) }
            throw SQLiteConnection.error(code, path: path, context: "open")
        }
        sqlite3_extended_result_codes(db, 1)
        self.handle = db
        self.path = path
    }

    deinit { sqlite3_close_v2(handle) }

    static func error(_ code: SQLiteResultCode, path: String, context: String) -> SpoolError {
        let kind: SpoolError.Code = code.meansFull ? .diskFull : code.meansCorruption ? .corrupt : .sqlite
        return SpoolError(kind, path: path, context: context, sqlite: code)
    }

    func error(_ rc: Int32, _ context: String) -> SpoolError {
        let message = String(cString: sqlite3_errmsg(handle))
        return Self.error(SQLiteResultCode(rawValue: rc), path: path, context: "\(context): \(message)")
    }

    package func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    package func prepare(_ sql: String) throws -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "prepare \(sql)") }
        return SQLiteStatement(stmt, connection: self, sql: sql)
    }

    /// The first column of the first row, as text (for pragmas).
    package func text(_ sql: String) throws -> String? {
        let s = try prepare(sql)
        guard try s.step() else { return nil }
        return s.text(0)
    }

    package func int64(_ sql: String) throws -> Int64? {
        let s = try prepare(sql)
        guard try s.step(), !s.isNull(0) else { return nil }
        return s.int64(0)
    }

    /// True outside a transaction. SQLite may or may not have rolled back by itself after SQLITE_FULL
    /// (https://sqlite.org/lang_transaction.html, "Response To Errors Within A Transaction"), so callers check.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
}

/// A prepared statement; reset before each use. Columns are 0-based, parameters 1-based (SQLite's convention).
package final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let connection: SQLiteConnection
    private let sql: String

    init(_ stmt: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.stmt = stmt
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(stmt) }

    package func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    package func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(stmt, index, value) }
    package func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(stmt, index, value) }
    package func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(stmt, index, value) } else { sqlite3_bind_null(stmt, index) }
    }
    package func bind(_ index: Int32, _ value: String) { sqlite3_bind_text(stmt, index, value, -1, transient) }
    package func bind(_ index: Int32, _ value: [UInt8]) {
        _ = value.withUnsafeBytes { raw in
            // A zero-length blob must still be a blob, not NULL: bind_zeroblob keeps the NOT NULL constraint happy.
            if raw.isEmpty {
                sqlite3_bind_zeroblob(stmt, index, 0)
            } else {
                sqlite3_bind_blob(stmt, index, raw.baseAddress, Int32(raw.count), transient)
            }
        }
    }

    /// Steps once: true when a row is available, false when done.
    package func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(stmt)
            throw connection.error(rc, sql)
        }
    }

    /// Rows the connection's last INSERT, UPDATE or DELETE changed.
    package var changes: Int { Int(sqlite3_changes(sqlite3_db_handle(stmt))) }

    /// Runs a statement that returns no rows.
    package func run() throws {
        defer { sqlite3_reset(stmt) }
        while try step() {}
    }

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    package func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    package func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    package func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    package func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        return String(cString: p)
    }
    package func blob(_ column: Int32) -> [UInt8] {
        // column_blob first, then column_bytes: the order SQLite documents for a stable length.
        let p = sqlite3_column_blob(stmt, column)
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count > 0, let p else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }
}
