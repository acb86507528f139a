import Foundation

/// Replaces a small file so that after a power cut it holds the old bytes or the new ones, never a mix: written to a
/// temporary file, fsync'd, renamed over the old, then the directory fsync'd (the rename is durable only once the
/// directory entry is on disk).
enum DurableWrite {
    static func replace(_ path: String, with bytes: [UInt8]) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(path, "creating \(temporary)") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            written += n
        }
        let synced = written == bytes.count ? fsync(fd) : -1
        let error = written == bytes.count && synced == 0 ? nil : failure(path, "writing \(temporary)")
        close(fd)
        if let error {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else { throw failure(path, "renaming \(temporary)") }
        let directory = (path as NSString).deletingLastPathComponent
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    private static func failure(_ path: String, _ context: String) -> SpoolError {
        let code = errno
        return SpoolError(code == ENOSPC ? .diskFull : .fileSystem, path: path, context: context, errno: code)
    }
}
