import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One wait for a socket to become ready (a non-blocking connect completing, a connection to accept):
/// poll(2) on a thread of its own, beside a self-pipe that a cancelled task or a `close()` writes to, the
/// same way `OwnedDescriptor` lets a close interrupt a blocked read. One-shot: once woken it stays woken.
final class L2CAPReadiness: @unchecked Sendable {
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init() throws {
        var p: [Int32] = [-1, -1]
        guard pipe(&p) == 0 else { throw TransportError.fromErrno(errno, "pipe") }
        _ = fcntl(p[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(p[1], F_SETFD, FD_CLOEXEC)
        wakeRead = p[0]
        wakeWrite = p[1]
    }

    deinit {
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    /// Interrupts the wait, now or before it starts.
    func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(wakeWrite, &one, 1)
    }

    /// Blocks until `events` (or an error or hang-up) on `fd`; the revents, or nil when woken.
    func wait(fd: Int32, events: Int16) throws -> Int16? {
        while true {
            var fds = [
                pollfd(fd: fd, events: events, revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let r = poll(&fds, 2, -1)
            if r < 0 {
                if errno == EINTR { continue }
                throw TransportError.fromErrno(errno, "poll")
            }
            if fds[1].revents != 0 { return nil }
            if fds[0].revents != 0 { return fds[0].revents }
        }
    }

    /// `wait` from async code: the poll runs on a thread of its own, and cancelling the task wakes it.
    func ready(fd: Int32, events: Int16, name: String) async throws -> Int16? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Int16?, any Error>) in
                let thread = Thread { [self] in c.resume(with: Result { try self.wait(fd: fd, events: events) }) }
                thread.name = name
                thread.start()
            }
        } onCancel: {
            wake()
        }
    }
}
