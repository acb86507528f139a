/// Exponential backoff with jitter, as a value: `next` gives the delay before the following attempt, `reset`
/// starts over after a successful connection. Randomness is passed in so tests are deterministic.
public struct MQTTBackoff: Sendable {
    public let configuration: MQTTConfiguration.Reconnect
    /// Failures since the last success.
    public private(set) var failures = 0

    public init(_ configuration: MQTTConfiguration.Reconnect) { self.configuration = configuration }

    /// Delay after one more failure: `min · 2^(failures-1)`, capped at `max`, minus up to `jitter` of itself
    /// ("equal jitter" keeps a floor so a broken broker is never hammered).
    public mutating func next<R: RandomNumberGenerator>(using random: inout R) -> Duration {
        failures += 1
        let minimum = max(configuration.minDelay, .milliseconds(1))
        let exponent = min(failures - 1, 40)
        let base = min(configuration.maxDelay, minimum * Double(1 << UInt64(exponent)))
        let jitter = min(max(configuration.jitter, 0), 1)
        let fraction = jitter == 0 ? 0 : Double.random(in: 0..<jitter, using: &random)
        return base * (1 - fraction)
    }

    public mutating func reset() { failures = 0 }
}
