import Foundation

/// `<spool>.seq`: a number no issued seq exceeds. It lets a spool whose database was lost (corrupt beyond reading,
/// or deleted) continue ABOVE every seq it ever issued, so a seq is never reused. It is rewritten (write, fsync,
/// rename, fsync the directory) only when the issued seqs reach it, and then reserves `block` more: one extra
/// fsync per 65,536 readings instead of one per commit (the Hi/Lo allocation idea).
struct SequenceReservation {
    static let block: UInt64 = 65_536
    let path: String

    init(spoolPath: String) { path = spoolPath + ".seq" }

    /// The reserved ceiling, or nil when the file is missing or unreadable.
    func read() -> UInt64? {
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)
        else { return nil }
        return UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Durably records `ceiling`.
    func write(_ ceiling: UInt64) throws {
        try DurableWrite.replace(path, with: Array("\(ceiling)\n".utf8))
    }
}
