import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one owner of a file descriptor used by a transport: blocking reads that a `close()` from any
/// thread interrupts (through a self-pipe the reader also polls), whole-buffer writes, and a close
/// that happens exactly once and only after the reader has let go, so the number is never reused
/// under a read in flight.
final class OwnedDescriptor: @unchecked Sendable {
    /// Guarded by `lock`: -1 once released.
    private var fd: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let lock = NSLock()
    private var closing = false

    /// Takes ownership of `fd`.
    init(_ fd: Int32) throws {
        var p: [Int32] = [-1, -1]
        guard pipe(&p) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw TransportError.fromErrno(e, "pipe")
        }
        _ = fcntl(p[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(p[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
        self.wakeRead = p[0]
        self.wakeWrite = p[1]
    }

    deinit {
        release()
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    var isClosing: Bool { lock.withLock { closing } }

    /// Runs `body` with the descriptor while it is still open.
    func withFD<T>(_ body: (Int32) throws -> T) throws -> T {
        try lock.withLock {
            guard !closing, fd >= 0 else { throw TransportError(.closed, "the transport is closed") }
            return try body(fd)
        }
    }

    /// Blocks until bytes arrive. Returns the count read (0 = end of input), or nil when `close()` woke it.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        let fd: Int32 = lock.withLock { closing ? -1 : self.fd }
        guard fd >= 0 else { return nil }
        while true {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let r = poll(&fds, 2, -1)
            if r < 0 {
                if errno == EINTR { continue }
                throw TransportError.fromErrno(errno, "poll")
            }
            if fds[1].revents != 0 || isClosing { return nil }
            if fds[0].revents & Int16(POLLNVAL) != 0 { return nil }
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n < 0 {
                let e = errno
                if e == EINTR || e == EAGAIN { continue }
                if isClosing { return nil }
                throw TransportError.fromErrno(e, "read")
            }
            return n
        }
    }

    /// Writes every byte (a short write is continued; one `write` per packet on datagram sockets).
    func writeAll(_ bytes: [UInt8], what: String) throws {
        try withFD { fd in
            try bytes.withUnsafeBytes { raw in
                var off = 0
                while off < raw.count {
                    let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw TransportError.fromErrno(errno, what)
                    }
                    off += n
                }
            }
        }
    }

    /// Wakes a blocked reader; the descriptor itself is closed by `release()` (the reader calls it when done).
    func close() {
        let first: Bool = lock.withLock {
            if closing { return false }
            closing = true
            return true
        }
        if first {
            var one: UInt8 = 1
            _ = Glibc.write(wakeWrite, &one, 1)
        }
    }

    /// Closes the descriptor now; idempotent.
    func release() {
        lock.withLock {
            closing = true
            if fd >= 0 {
                _ = Glibc.close(fd)
                fd = -1
            }
        }
    }
}
