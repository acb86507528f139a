import BLETransport
import Testing

/// `forEachConcurrently` keeps at most its limit of calls running, takes no element beyond that from the sequence,
/// and carries out every element once the calls finish.
struct BoundedConcurrencyTests {
    /// Calls that wait until the test lets them go, counting how many run at once.
    final class Gate: Sendable {
        let state = Locked<(running: Int, most: Int, done: Int, waiting: [CheckedContinuation<Void, Never>])>(
            (0, 0, 0, []))
        let started: AsyncStream<Int>
        let startedContinuation: AsyncStream<Int>.Continuation

        init() { (started, startedContinuation) = AsyncStream.makeStream() }

        func call(_ n: Int) async {
            await withCheckedContinuation { c in
                state.withLock {
                    $0.running += 1
                    $0.most = max($0.most, $0.running)
                    $0.waiting.append(c)
                }
                startedContinuation.yield(n)
            }
            state.withLock {
                $0.running -= 1
                $0.done += 1
            }
        }

        func releaseAll() {
            for c in state.withLock({ s -> [CheckedContinuation<Void, Never>] in
                defer { s.waiting = [] }
                return s.waiting
            }) { c.resume() }
        }
    }

    @Test func atMostTheLimitRunAndTheRestWaitInTheSequence() async throws {
        let gate = Gate()
        let (commands, feed) = AsyncStream<Int>.makeStream()
        for n in 1...40 { feed.yield(n) }
        feed.finish()
        let runner = Task { try await forEachConcurrently(commands, atMost: 16) { await gate.call($0) } }
        // The first 16 start; nothing more may start until one finishes.
        var started: [Int] = []
        var arrivals = gate.started.makeAsyncIterator()
        while started.count < 16, let n = await arrivals.next() { started.append(n) }
        #expect(Set(started) == Set(1...16))
        #expect(gate.state.withLock { $0.running } == 16)
        // Let them go; each one that finishes lets one more start, which is let go as it arrives.
        gate.releaseAll()
        for _ in 17...40 {
            _ = await arrivals.next()
            gate.releaseAll()
        }
        try await runner.value
        #expect(gate.state.withLock { $0.most } == 16)
        #expect(gate.state.withLock { $0.done } == 40)
    }
}
