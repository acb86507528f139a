import BLETransport
import Foundation

/// Runs `body` until it ends or SIGINT/SIGTERM arrives; a signal cancels it, so the command leaves through its
/// normal path — buffered output flushed, files closed, a summary printed — instead of dying with its buffers.
/// Returns whether a signal ended it.
///
/// The handler only writes the signal's number to a pipe (write(2) is async-signal-safe); a thread blocked on the
/// pipe's other end cancels the task. The classic self-pipe, rather than a dispatch signal source: its signal thread
/// is one more runtime thread, and it brings down valgrind, which the benchmarks run the command under.
@discardableResult
func cancellingOnSignals(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
    try await untilSignalled(body) == nil
}

/// `cancellingOnSignals` for a body with a result: the result, or nil when a signal ended it.
func untilSignalled<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
    let task = Task { try await body() }
    let signalled = Locked(false)
    let pipe = SignalPipe.shared
    pipe.onSignal { _ in
        signalled.withLock { $0 = true }
        task.cancel()
    }
    defer { pipe.onSignal(nil) }
    let value: T
    do {
        value = try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    } catch is CancellationError where signalled.withLock({ $0 }) {
        return nil
    }
    return signalled.withLock { $0 } ? nil : value
}

/// The write end of the signal pipe, for the C handler (which can capture nothing).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// SIGINT and SIGTERM, as bytes on a pipe read by one thread that calls the current handler.
private final class SignalPipe: @unchecked Sendable {
    static let shared = SignalPipe()
    private let handler = Locked<(@Sendable (Int32) -> Void)?>(nil)

    private init() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        signalPipeWriteEnd = fds[1]
        let readEnd = fds[0]
        let thread = Thread { [handler] in
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n == 1 {
                    handler.withLock { $0 }?(Int32(byte))
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        thread.name = "signals"
        thread.start()
        for sig in [SIGINT, SIGTERM] {
            signal(sig) { sig in
                var byte = UInt8(truncatingIfNeeded: sig)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
        }
    }

    func onSignal(_ h: (@Sendable (Int32) -> Void)?) { handler.withLock { $0 = h } }
}
