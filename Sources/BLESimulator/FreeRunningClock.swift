import BLETransport
import Foundation

/// `--speed max`: virtual time that jumps to each deadline instead of waiting for it. The radio,
/// its only sleeper, therefore runs as fast as it can compute; a gateway process cannot follow
/// this clock (clock.json says so), which is fine for benchmarks.
public final class FreeRunningClock: BLEClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Duration = .zero
    private let originUnixTime: Double

    public init(originUnixTime: Double = Date().timeIntervalSince1970) { self.originUnixTime = originUnixTime }

    public func now() -> Duration { lock.withLock { current } }

    public func sleep(until deadline: Duration) async throws {
        try Task.checkCancellation()
        lock.withLock { if deadline > current { current = deadline } }
    }

    public func unixTime() -> Double { originUnixTime + now().seconds }
}
