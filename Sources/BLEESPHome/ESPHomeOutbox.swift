import BLETransport

/// What one client's writer sends, in order: frames already made (the handshake's), messages it frames and seals
/// itself (so the noise nonce follows the write order), and raw advertisements, bounded: past `limit` waiting, a new
/// one is refused, and the proxy counts it (`ESPHomeStatistics.advertisementsDropped`). Replies are bounded too, by
/// `replyLimit`: a client that keeps asking and never reads would otherwise hold memory without end; past it the
/// proxy closes that client (`ESPHomeStatistics.stalledClients`).
final class ESPHomeOutbox: Sendable {
    enum Item: Sendable {
        case framed([UInt8])
        case message(ESPHomeMessageType, [UInt8])
    }

    struct Batch: Sendable {
        var items: [Item] = []
        var advertisements: [ESPHome_BluetoothLERawAdvertisement] = []
    }

    private struct Queue: Sendable {
        var batch = Batch()
        /// No more items: the writer sends what is queued, then ends.
        var finished = false
    }

    let limit: Int
    let replyLimit: Int
    private let queue = Locked(Queue())
    private let ready = WakeSignal()

    init(limit: Int, replyLimit: Int = 256) {
        self.limit = limit
        self.replyLimit = replyLimit
    }

    /// False when `replyLimit` items already wait unsent (the item is not queued): the client does not read.
    @discardableResult
    func send(_ item: Item) -> Bool {
        let kept = queue.withLock { q -> Bool in
            guard q.batch.items.count < replyLimit else { return false }
            if !q.finished { q.batch.items.append(item) }
            return true
        }
        ready.signal()
        return kept
    }

    /// False when the advertisement was dropped (the client is `limit` behind).
    func advertise(_ a: ESPHome_BluetoothLERawAdvertisement) -> Bool {
        let kept = queue.withLock { q -> Bool in
            guard !q.finished, q.batch.advertisements.count < limit else { return false }
            q.batch.advertisements.append(a)
            return true
        }
        if kept { ready.signal() }
        return kept
    }

    func finish() {
        queue.withLock { $0.finished = true }
        ready.signal()
    }

    /// Everything queued, once there is something; nil when finished and empty (or the task is cancelled).
    func next() async -> Batch? {
        while !Task.isCancelled {
            let taken = queue.withLock { q -> Batch?? in
                if !q.batch.items.isEmpty || !q.batch.advertisements.isEmpty {
                    defer { q.batch = Batch() }
                    return .some(q.batch)
                }
                return q.finished ? .some(nil) : nil
            }
            if let taken { return taken }
            await ready.wait()
        }
        return nil
    }
}
