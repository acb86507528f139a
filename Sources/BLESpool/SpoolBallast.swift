import Foundation

/// `<path>.reserve`: space the spool holds back on its file system for the moment something else fills it. A WAL
/// transaction needs room to grow even to delete rows, so on a file system that is full to the last byte nothing, not
/// even making room for a state, could be written. Released (deleted) when a state meets a full disk, made again once
/// commits succeed with room to spare.
struct SpoolBallast {
    let path: String
    let bytes: Int

    init(spoolPath: String, bytes: Int) {
        path = spoolPath + ".reserve"
        self.bytes = bytes
    }

    var isHeld: Bool {
        var st = stat()
        return stat(path, &st) == 0 && Int(st.st_size) >= bytes
    }

    /// Makes the reserve with allocated blocks (posix_fallocate, not a sparse file); false when there is no room.
    @discardableResult
    func hold() -> Bool {
        guard bytes > 0, !isHeld else { return bytes > 0 }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard posix_fallocate(fd, 0, off_t(bytes)) == 0, fsync(fd) == 0 else {
            ftruncate(fd, 0)
            unlink(path)
            return false
        }
        return true
    }

    /// Gives the space back to the file system; true when there was a reserve to release.
    func release() -> Bool {
        guard bytes > 0, FileManager.default.fileExists(atPath: path) else { return false }
        return unlink(path) == 0
    }
}
