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
        let temporary = path + ".tmp"
        let bytes = Array("\(ceiling)\n".utf8)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("creating \(temporary)") }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else {
            let error = failure("writing \(temporary)")
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else { throw failure("renaming \(temporary)") }
        let directory = (path as NSString).deletingLastPathComponent
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    private func failure(_ context: String) -> SpoolError {
        let code = errno
        return SpoolError(code == ENOSPC ? .diskFull : .fileSystem, path: path, context: context, errno: code)
    }
}
