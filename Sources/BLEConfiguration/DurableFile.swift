import Foundation

/// Replaces a small file so that after a power cut it holds the old bytes or the new ones, never a mix, and the new
/// ones once this returns: written to a temporary file, fsync'd, renamed over the old, then the directory fsync'd
/// (POSIX rename is atomic, but the rename itself is durable only once the directory entry is on disk).
package enum DurableFile {
    struct WriteError: Error, CustomStringConvertible {
        var path: String
        var operation: String
        var errno: Int32
        var description: String { "\(path): \(operation) failed: errno \(errno) (\(String(cString: strerror(errno))))" }
    }

    package static func replace(_ path: String, with bytes: [UInt8]) throws {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WriteError(path: tmp, operation: "open", errno: errno) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = errno
                close(fd)
                throw WriteError(path: tmp, operation: "write", errno: e)
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            throw WriteError(path: tmp, operation: "fsync", errno: e)
        }
        close(fd)
        guard rename(tmp, path) == 0 else { throw WriteError(path: path, operation: "rename", errno: errno) }
        try syncDirectory(of: path)
    }

    /// Removes `path` durably (the directory entry's removal fsync'd).
    package static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw WriteError(path: path, operation: "unlink", errno: errno)
        }
        try syncDirectory(of: path)
    }

    static func syncDirectory(of path: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        let dfd = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw WriteError(path: parent, operation: "open", errno: errno) }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw WriteError(path: parent, operation: "fsync", errno: errno) }
    }
}
