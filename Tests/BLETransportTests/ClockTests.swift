import BLETestSupport
import Testing

@testable import BLETransport

@Suite struct ClockTests {
    @Test func manualClockWakesASleeperOnlyWhenItsDeadlinePasses() async throws {
        let clock = ManualClock()
        let woke = Task {
            try await clock.sleep(for: .seconds(5))
            return clock.now()
        }
        await clock.untilSleeping()
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(try await woke.value == .seconds(5))
    }

    @Test func manualClockSleepIsCancellable() async throws {
        let clock = ManualClock()
        let t = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.untilSleeping()
        t.cancel()
        await #expect(throws: CancellationError.self) { try await t.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func scaledClocksWithTheSameOriginAgree() {
        let a = ScaledClock(factor: 60, realOrigin: 1000)
        let b = ScaledClock(factor: 60, realOrigin: 1000)
        #expect(abs((a.now() - b.now()).seconds) < 1.0)
        #expect(a.now() > .seconds(60))  // far more than one real second has passed since 1970+1000 s
    }
}
