import Foundation

/// Wakes one waiting task: the publisher sleeps until new readings are durable, an acknowledgement frees room in the
/// window, or the connection changes; the spool sleeps until its commit window ends or an urgent reading arrives. A
/// signal posted while nobody waits is remembered, so no wake-up is lost between a check and a wait.
public final class WakeSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = false
    private var waiter: CheckedContinuation<Void, Never>?

    public init() {}

    public func signal() {
        let w: CheckedContinuation<Void, Never>? = lock.withLock {
            if let w = waiter {
                waiter = nil
                return w
            }
            pending = true
            return nil
        }
        w?.resume()
    }

    /// Returns on a signal (or one already pending), or when the task is cancelled.
    public func wait() async {
        if lock.withLock({
            let p = pending
            pending = false
            return p
        }) {
            return
        }
        await waitForSignal()
    }

    /// Returns on a signal (or one already pending), after `timeout`, or when the task is cancelled.
    public func wait(upTo timeout: Duration, clock: any BLEClock) async {
        if lock.withLock({
            let p = pending
            pending = false
            return p
        }) {
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask { try? await clock.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = lock.withLock {
                    if pending || Task.isCancelled {
                        pending = false
                        return true
                    }
                    waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let w: CheckedContinuation<Void, Never>? = lock.withLock {
                defer { waiter = nil }
                return waiter
            }
            w?.resume()
        }
    }
}
