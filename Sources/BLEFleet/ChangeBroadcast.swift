import BLETransport

/// Tells every open page that the model changed. Each listener's stream keeps only the newest signal, so a burst of
/// ten thousand messages wakes a page once; a listener that is slow simply sees the newest state when it gets there.
final class ChangeBroadcast: Sendable {
    /// The open streams by id, the last id given, and whether the broadcast has finished: one lock, so a listener
    /// that arrives as the broadcast finishes is either finished with the others or finished at once.
    private struct Listeners {
        var open: [Int: AsyncStream<Void>.Continuation] = [:]
        var lastID = 0
        var finished = false
    }
    private let listeners = Locked(Listeners())

    /// A stream that yields once now and after every change; it ends when the broadcast finishes.
    func listen() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield()
        let id = listeners.withLock { l -> Int? in
            guard !l.finished else { return nil }
            l.lastID += 1
            l.open[l.lastID] = continuation
            return l.lastID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.open.removeValue(forKey: id) }
        }
        return stream
    }

    /// Called for every message (tens of thousands a second): no allocation, nothing when no page is open.
    /// Yielding under the lock is safe: a yield never calls back (only finishing runs `onTermination`).
    func changed() {
        listeners.withLock { for c in $0.open.values { c.yield() } }
    }

    /// Ends every stream (shutdown: the pages' event streams close so the HTTP server can stop).
    func finish() {
        let open = listeners.withLock { l in
            defer {
                l.open.removeAll()
                l.finished = true
            }
            return Array(l.open.values)
        }
        for c in open { c.finish() }
    }

    var listenerCount: Int { listeners.withLock { $0.open.count } }
}
