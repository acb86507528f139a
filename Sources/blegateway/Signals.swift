import BLETransport
import Foundation

/// Runs `body` until it ends or SIGINT/SIGTERM arrives; a signal cancels it, so the command leaves through its
/// normal path — buffered output flushed, files closed, a summary printed — instead of dying with its buffers.
/// Returns whether a signal ended it.
@discardableResult
func cancellingOnSignals(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
    let task = Task { try await body() }
    let signalled = Locked(false)
    let sources = [SIGINT, SIGTERM].map { sig in
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler {
            signalled.withLock { $0 = true }
            task.cancel()
        }
        source.resume()
        return source
    }
    defer { sources.forEach { $0.cancel() } }
    do {
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    } catch is CancellationError where signalled.withLock({ $0 }) {}
    return signalled.withLock { $0 }
}
