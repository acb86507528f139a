import Foundation

/// What a `StageQueue` does with a droppable element when it is full.
public enum StageWhenFull: Sendable, Hashable {
    /// The producer waits for room (a source that can be paused).
    case wait
    /// Droppable elements beyond the bound are counted and discarded (a live radio).
    case drop
}

/// What became of an element offered to a `StageQueue`.
public enum StageOutcome: Sendable, Hashable {
    case enqueued
    /// Full, and the element was droppable: counted in `dropped`.
    case dropped
    /// The consumer is gone, or the queue was finished.
    case terminated
}

/// The queue between two stages of the data path (fd → controller → scanner → consumer): one consumer, any number
/// of producers, and a bound that means what the source can afford.
///
/// - A source that can wait (a capture file, a pipe, a socket whose peer blocks when its buffer fills) makes the
///   queue `.wait`: a producer that finds it full waits — a task on a continuation, a reader thread on a condition —
///   until the consumer makes room. Nothing is lost, and a replay goes exactly as fast as its slowest stage.
/// - A live radio cannot be paused, so its queue is `.drop`: beyond the bound a droppable element (an advertising
///   report) is refused and counted in `dropped`, which the health topic publishes.
///
/// In both, an `essential` element (a command's answer, a connection event, ACL data, Number Of Completed Packets,
/// a Hardware Error) is never refused: the host's state depends on each one, and they are few.
///
/// The consumer ends its side by leaving the iteration (its task cancelled) or with `cancel()`; producers are then
/// released and what they send is discarded (`.terminated`), so no stage waits for a consumer that is gone.
public final class StageQueue<Element: Sendable>: AsyncSequence, @unchecked Sendable {
    public typealias Failure = any Error

    public typealias WhenFull = StageWhenFull
    public typealias Outcome = StageOutcome

    public let capacity: Int
    public let whenFull: WhenFull

    // Everything below is guarded by `condition` (its mutex). The fast paths are inlinable so that each stage's
    // module specializes them for its element: unspecialized, every call looked up generic metadata at run time
    // (a quarter of a replay's CPU, measured with perf).
    @usableFromInline let condition = NSCondition()
    @usableFromInline var buffer: [Element?] = []
    @usableFromInline var head = 0
    @usableFromInline var count = 0
    @usableFromInline var ended: (any Error)??  // nil: open; .some(nil): finished; .some(error): failed
    @usableFromInline var consumerGone = false
    @usableFromInline var consumer: CheckedContinuation<Element?, any Error>?
    @usableFromInline var waitingProducers: [CheckedContinuation<Void, Never>] = []
    @usableFromInline var blockedThreads = 0
    private var droppedCount = 0
    private var onTermination: (@Sendable () -> Void)?

    public init(capacity: Int, whenFull: WhenFull) {
        precondition(capacity > 0, "a stage queue holds at least one element")
        self.capacity = capacity
        self.whenFull = whenFull
        buffer = Array(repeating: nil, count: Swift.min(capacity, 1024))
    }

    /// Droppable elements refused because the queue was full (`.drop` only).
    public var dropped: Int { condition.withLock { droppedCount } }

    /// Elements waiting for the consumer.
    public var depth: Int { condition.withLock { count } }

    /// Called once when the consumer goes away (cancel, end of iteration by cancellation): a transport closes its fd.
    public func setOnTermination(_ handler: @escaping @Sendable () -> Void) {
        let runNow = condition.withLock { () -> Bool in
            if consumerGone { return true }
            onTermination = handler
            return false
        }
        if runNow { handler() }
    }

    // MARK: Producers

    /// From a task: enqueues, waiting for room when the queue is `.wait` and full.
    @inlinable @discardableResult
    public func send(_ element: Element, essential: Bool = false) async -> Outcome {
        if appendIfRoom(element, essential: essential) { return .enqueued }
        return await sendSlowly(element, essential: essential)
    }

    /// The fast path of `send`: room, and no consumer waiting to be resumed.
    @inlinable func appendIfRoom(_ element: Element, essential: Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard consumer == nil, !consumerGone, ended == nil, count < capacity || essential else { return false }
        appendLocked(element)
        return true
    }

    @usableFromInline func sendSlowly(_ element: Element, essential: Bool) async -> Outcome {
        while true {
            let (outcome, resume): (Outcome?, CheckedContinuation<Element?, any Error>?) = condition.withLock {
                offerLocked(element, essential: essential, mayWait: true)
            }
            if let resume { resume.resume(returning: element) }
            if let outcome { return outcome }
            // Full and `.wait`: wait for the consumer to take one (or to leave), then try again.
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = condition.withLock { () -> Bool in
                    if count < capacity || consumerGone || ended != nil { return true }
                    waitingProducers.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    /// From a thread that may block (a transport's reader): as `send`, waiting on a condition when full.
    @discardableResult
    public func sendBlocking(_ element: Element, essential: Bool = false) -> Outcome {
        condition.lock()
        while true {
            let (outcome, resume) = offerLocked(element, essential: essential, mayWait: true)
            if let outcome {
                condition.unlock()
                resume?.resume(returning: element)
                return outcome
            }
            blockedThreads += 1
            condition.wait()
            blockedThreads -= 1
        }
    }

    /// Never waits: a full queue refuses a droppable element whatever `whenFull` says (counted).
    @discardableResult
    public func offer(_ element: Element, essential: Bool = false) -> Outcome {
        let (outcome, resume) = condition.withLock { offerLocked(element, essential: essential, mayWait: false) }
        resume?.resume(returning: element)
        return outcome ?? .dropped
    }

    /// No more elements: the consumer gets what is queued, then the end (or `error`).
    public func finish(throwing error: (any Error)? = nil) {
        let c: CheckedContinuation<Element?, any Error>? = condition.withLock {
            guard ended == nil else { return nil }
            ended = .some(error)
            releaseProducersLocked()
            guard count == 0, let c = consumer else { return nil }
            consumer = nil
            return c
        }
        guard let c else { return }
        if let error { c.resume(throwing: error) } else { c.resume(returning: nil) }
    }

    /// Returns nil and the element delivered (to hand to a waiting consumer outside the lock), or the outcome;
    /// (nil, nil) means: full, wait.
    private func offerLocked(_ element: Element, essential: Bool, mayWait: Bool)
        -> (Outcome?, CheckedContinuation<Element?, any Error>?)
    {
        if consumerGone || ended != nil { return (.terminated, nil) }
        if let c = consumer {
            consumer = nil
            return (.enqueued, c)
        }
        if count >= capacity && !essential {
            if whenFull == .drop || !mayWait {
                droppedCount += 1
                return (.dropped, nil)
            }
            return (nil, nil)
        }
        appendLocked(element)
        return (.enqueued, nil)
    }

    @inlinable func appendLocked(_ element: Element) {
        if count == buffer.count { grow() }
        var slot = head + count
        if slot >= buffer.count { slot -= buffer.count }
        buffer[slot] = element
        count += 1
    }

    @usableFromInline func grow() {
        var bigger = [Element?](repeating: nil, count: Swift.max(buffer.count * 2, 16))
        for i in 0..<count { bigger[i] = buffer[(head + i) % buffer.count] }
        buffer = bigger
        head = 0
    }

    /// Wakes every waiting producer; each tries again. Called with the lock held.
    @usableFromInline func releaseProducersLocked() {
        if blockedThreads > 0 { condition.broadcast() }
        guard !waitingProducers.isEmpty else { return }
        let waiting = waitingProducers
        waitingProducers.removeAll()
        for w in waiting { w.resume() }  // resuming only schedules the task: safe under the lock
    }

    // MARK: The consumer

    /// The consumer leaves: producers are released and later elements are discarded.
    public func cancel() {
        let (handler, c): ((@Sendable () -> Void)?, CheckedContinuation<Element?, any Error>?) = condition.withLock {
            guard !consumerGone else { return (nil, nil) }
            consumerGone = true
            buffer = []
            count = 0
            head = 0
            releaseProducersLocked()
            defer {
                onTermination = nil
                consumer = nil
            }
            return (onTermination, consumer)
        }
        c?.resume(returning: nil)
        handler?()
    }

    @inlinable public func next() async throws -> Element? {
        // A consumer whose task is cancelled leaves at once, as from an `AsyncStream`: a producer that never lets the
        // queue run empty (a socket at full speed) must not keep a cancelled stage alive.
        if Task.isCancelled {
            cancel()
            return nil
        }
        // The common case in a busy path: something is queued. Taken without a continuation (which would cost an
        // allocation per element); only an empty queue suspends.
        if let e = popIfAny() { return e }
        return try await nextSlowly()
    }

    @inlinable func popIfAny() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return count > 0 ? popLocked() : nil
    }

    @inlinable func popLocked() -> Element {
        let e = buffer[head].unsafelyUnwrapped
        buffer[head] = nil
        head += 1
        if head == buffer.count { head = 0 }
        count -= 1
        if blockedThreads > 0 || !waitingProducers.isEmpty, count < capacity { releaseProducersLocked() }
        return e
    }

    @usableFromInline func nextSlowly() async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Element?, any Error>) in
                let result: Result<Element?, any Error>? = condition.withLock {
                    if let ready = takeLocked() { return ready }
                    consumer = c
                    return nil
                }
                if let result { c.resume(with: result) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The next element, the end, or nil when the consumer must wait. Called with the lock held.
    private func takeLocked() -> Result<Element?, any Error>? {
        if count > 0 { return .success(popLocked()) }
        if consumerGone { return .success(nil) }
        if let ended {
            if let error = ended { return .failure(error) }
            return .success(nil)
        }
        return nil
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline let queue: StageQueue
        @inlinable init(queue: StageQueue) { self.queue = queue }
        @inlinable public mutating func next() async throws -> Element? { try await queue.next() }
    }

    @inlinable public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: self) }
}

extension StageQueue {
    /// The bound between two stages: about 1.5 s of a busy hall's reports (3,000/s), a few hundred kilobytes.
    public static var defaultCapacity: Int { 4096 }
}

extension StageQueue {
    /// The elements, for a consumer whose producers never fail the queue (a controller's subscribers): the iteration
    /// ends at the queue's end either way.
    public var ignoringErrors: AsyncStream<Element> {
        AsyncStream(unfolding: { [self] in try? await self.next() }, onCancel: { [self] in self.cancel() })
    }
}
