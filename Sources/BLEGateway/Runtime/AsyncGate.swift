import BLETransport

/// One task at a time through a critical section that awaits (a lock cannot be held across `await`). First come,
/// first served. Used where two callers change the same session's tasks: a recovery step and a duty change.
final class AsyncGate: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    func withGate<T: Sendable>(_ body: () async -> T) async -> T {
        await enter()
        defer { leave() }
        return await body()
    }

    private func enter() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.held {
                    s.waiters.append(c)
                    return false
                }
                s.held = true
                return true
            }
            if now { c.resume() }
        }
    }

    private func leave() {
        // The gate passes straight to the next waiter (it stays held), so nobody can cut in.
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.held = false
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
