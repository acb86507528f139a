import BLETransport
import Foundation

/// The real clock, counting the sleeps it is asked for: each is a timer wake-up of whoever asked. An idle gateway's
/// test and the idle benchmarks count them.
public final class CountingClock: BLEClock, @unchecked Sendable {
    private let base = SystemClock()
    private let lock = NSLock()
    private var begun = 0

    public init() {}

    /// The sleeps begun so far.
    public var sleeps: Int { lock.withLock { begun } }

    public func now() -> Duration { base.now() }
    public func unixTime() -> Double { base.unixTime() }

    public func sleep(until deadline: Duration) async throws {
        lock.withLock { begun += 1 }
        try await base.sleep(until: deadline)
    }
}
