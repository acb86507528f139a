import BLETransport
import Foundation

/// Time that moves only when a test says so. Sleepers wake, in deadline order, when `advance`
/// passes their deadline.
public final class ManualClock: BLEClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Duration = .zero
    private let originUnixTime: Double
    private var sleepers: [(id: UInt64, deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextID: UInt64 = 0
    /// Sleeps begun on this clock, ever; and the tests waiting for the sleepers to reach a state.
    private var registrations: UInt64 = 0
    private var waiters: [(id: UInt64, awaited: Awaited, continuation: CheckedContinuation<Void, Never>)] = []

    /// What a test waits for: this many sleepers at once, or more sleeps begun than it counted.
    private enum Awaited {
        case sleepers(Int)
        case begunAfter(UInt64)
    }

    /// Called holding `lock`.
    private func holds(_ awaited: Awaited) -> Bool {
        switch awaited {
        case .sleepers(let count): sleepers.count >= count
        case .begunAfter(let begun): registrations > begun
        }
    }

    private func wait(for awaited: Awaited) async {
        let id: UInt64 = lock.withLock {
            nextID += 1
            return nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let ready: Bool = lock.withLock {
                    if holds(awaited) || Task.isCancelled { return true }
                    waiters.append((id, awaited, c))
                    return false
                }
                if ready { c.resume() }
            }
        } onCancel: {
            let c: CheckedContinuation<Void, Never>? = lock.withLock {
                guard let i = waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return waiters.remove(at: i).continuation
            }
            c?.resume()
        }
    }

    public init(originUnixTime: Double = 1_700_000_000) { self.originUnixTime = originUnixTime }

    public func now() -> Duration { lock.withLock { current } }

    public func unixTime() -> Double { originUnixTime + now().seconds }

    /// How many tasks are asleep on this clock: tests wait for it before advancing.
    public var sleeperCount: Int { lock.withLock { sleepers.count } }

    /// How many sleeps have begun on this clock: read it before an action, then `untilSleeping(after:)` waits for
    /// what the action woke to be asleep again (it has done its work).
    public var sleepsBegun: UInt64 { lock.withLock { registrations } }

    /// Returns once more than `begun` sleeps have begun on this clock, or when the caller is cancelled.
    public func untilSleeping(after begun: UInt64) async { await wait(for: .begunAfter(begun)) }

    /// Returns once at least `count` tasks are asleep on this clock (at once if they are), or when the caller is
    /// cancelled: a test advances time only when what it drives is waiting for it, without polling.
    public func untilSleeping(_ count: Int = 1) async { await wait(for: .sleepers(count)) }

    public func sleep(until deadline: Duration) async throws {
        let id: UInt64 = lock.withLock {
            nextID += 1
            return nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (ready, satisfied): (Bool, [CheckedContinuation<Void, Never>]) = lock.withLock {
                    if deadline <= current || Task.isCancelled { return (true, []) }
                    sleepers.append((id, deadline, c))
                    registrations += 1
                    let due = waiters.filter { holds($0.awaited) }
                    waiters.removeAll { holds($0.awaited) }
                    return (false, due.map(\.continuation))
                }
                for w in satisfied { w.resume() }
                if ready {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let c: CheckedContinuation<Void, any Error>? = lock.withLock {
                guard let i = sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return sleepers.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline anyone sleeps until, if anyone sleeps: a driver moves time straight there.
    public var nextDeadline: Duration? { lock.withLock { sleepers.map(\.deadline).min() } }

    /// Moves time to `t` (never back) and wakes, in deadline order, every sleeper whose deadline has come; returns
    /// how many it woke.
    @discardableResult
    public func advance(to t: Duration) -> Int { advance(by: max(t - now(), .zero)) }

    /// Moves time forward and wakes every sleeper whose deadline has come; returns how many it woke.
    @discardableResult
    public func advance(by d: Duration) -> Int {
        let due: [CheckedContinuation<Void, any Error>] = lock.withLock {
            current += d
            let ready = sleepers.filter { $0.deadline <= current }.sorted { $0.deadline < $1.deadline }
            sleepers.removeAll { $0.deadline <= current }
            return ready.map(\.continuation)
        }
        for c in due { c.resume() }
        return due.count
    }
}
