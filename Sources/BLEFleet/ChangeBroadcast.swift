import BLETransport

/// Tells every open page that the model changed. Each listener's stream keeps only the newest signal, so a burst of
/// ten thousand messages wakes a page once; a listener that is slow simply sees the newest state when it gets there.
final class ChangeBroadcast: Sendable {
    private let listeners = Locked<[Int: AsyncStream<Void>.Continuation]>([:])
    private let nextID = Locked(0)
    private let finished = Locked(false)

    /// A stream that yields once now and after every change; it ends when the broadcast finishes.
    func listen() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = nextID.withLock { n in
            n += 1
            return n
        }
        continuation.yield()
        if finished.withLock({ $0 }) {
            continuation.finish()
            return stream
        }
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    /// Called for every message (tens of thousands a second): no allocation, nothing when no page is open.
    /// Yielding under the lock is safe: a yield never calls back (only finishing runs `onTermination`).
    func changed() {
        listeners.withLock { for c in $0.values { c.yield() } }
    }

    /// Ends every stream (shutdown: the pages' event streams close so the HTTP server can stop).
    func finish() {
        finished.withLock { $0 = true }
        for c in listeners.withLock({ l in
            defer { l.removeAll() }
            return Array(l.values)
        }) { c.finish() }
    }

    var listenerCount: Int { listeners.withLock { $0.count } }
}
