import Foundation

/// Time, injected. Everything that waits, times out or stamps a reading asks a `BLEClock`, never
/// the system directly, so tests run in virtual time and the simulator and the gateway can follow
/// one clock (Hummingbird's `MockClock`; Core v5.4's timers are all relative, so a monotonic
/// `now()` is what the protocol code needs).
public protocol BLEClock: Sendable {
    /// Monotonic time since the clock's origin.
    func now() -> Duration
    /// Suspends until `now() >= deadline`; throws `CancellationError` if the task is cancelled.
    func sleep(until deadline: Duration) async throws
    /// Wall-clock time for timestamps on readings, in seconds since 1970; follows the same pace as `now()`.
    func unixTime() -> Double
}

extension BLEClock {
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration)
    }
}

extension Duration {
    /// Seconds as a Double, for filters and payloads.
    @inlinable public var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) * 1e-18
    }
}

/// Real time: the monotonic clock for intervals, the system's realtime clock for timestamps.
public struct SystemClock: BLEClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func now() -> Duration { ContinuousClock.now - origin }

    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: origin + deadline, tolerance: nil)
    }

    public func unixTime() -> Double { Date().timeIntervalSince1970 }
}

/// Virtual time that runs `factor` times faster than real time from a shared origin, so a
/// simulator and a gateway in different processes agree on "now" when given the same origin and
/// factor: a one-hour scenario at factor 60 takes a minute.
public struct ScaledClock: BLEClock {
    public let factor: Double
    /// Wall-clock seconds at virtual time zero (readings are stamped `originUnixTime + now()`).
    public let originUnixTime: Double
    private let realOriginUnixTime: Double

    /// - Parameters:
    ///   - factor: virtual seconds per real second (> 0).
    ///   - realOrigin: the real Unix time at which virtual time was zero; processes that share it share `now()`.
    ///   - originUnixTime: the Unix time virtual zero stands for in timestamps; defaults to `realOrigin`.
    public init(factor: Double, realOrigin: Double = Date().timeIntervalSince1970, originUnixTime: Double? = nil) {
        precondition(factor > 0, "a clock's speed factor must be positive")
        self.factor = factor
        self.realOriginUnixTime = realOrigin
        self.originUnixTime = originUnixTime ?? realOrigin
    }

    public func now() -> Duration { .seconds((Date().timeIntervalSince1970 - realOriginUnixTime) * factor) }

    public func sleep(until deadline: Duration) async throws {
        let realDelay = (deadline - now()).seconds / factor
        if realDelay > 0 {
            try await Task.sleep(nanoseconds: UInt64(realDelay * 1e9))
        } else {
            try Task.checkCancellation()
        }
    }

    public func unixTime() -> Double { originUnixTime + now().seconds }
}
