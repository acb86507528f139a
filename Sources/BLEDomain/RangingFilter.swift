#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An extended Kalman filter over the beacon's distance d and radial speed v (constant-velocity
/// model), measuring RSSI = P₁ₘ − k·ln d with k = 10·n / ln 10.
///
/// Why distance and not RSSI: a person walking straight at 1.4 m/s moves at constant speed in
/// metres but accelerates in dB (−k·v/d changes as d does; ≈ 2 dB/s² at 3 m), so a constant-velocity
/// model over RSSI lags exactly where it matters, while over distance it is exact. Why adaptive: a
/// standing beacon wants long memory and a walking one a second or two; the smoothed normalised
/// innovation (≈ 0 when the model fits, biased when it lags) moves the acceleration noise between
/// `quietAcceleration` and `maneuverAcceleration`. One `log` and about 30 flops per sample.
public struct RangingFilter: Sendable {
    /// Metres, metres per second, and their covariance.
    public private(set) var distance: Double
    public private(set) var speed: Double
    @usableFromInline var p00: Double
    @usableFromInline var p01: Double
    @usableFromInline var p11: Double
    /// Seconds of the last update.
    public private(set) var time: Double
    /// Smoothed normalised innovation (≈ 0 ± 0.23 while the model fits).
    public private(set) var innovation: Double

    @usableFromInline static let minimumDistance = 0.1
    @usableFromInline static let maximumDistance = 500.0

    /// Starts from one reading: the model inverted, with the reading's own uncertainty.
    public init(rssi: Double, rssiAt1m: Double, at t: Double, k: Double, configuration c: RangingFilterConfiguration) {
        let d = min(max(exp((rssiAt1m - rssi) / k), Self.minimumDistance), Self.maximumDistance)
        distance = d
        speed = 0
        let sd = d * c.measurementSigmaDB / k
        p00 = sd * sd
        p01 = 0
        p11 = 1
        time = t
        innovation = 0
    }

    /// Predicts to `t` and folds in one reading. Returns the filtered RSSI: the model's RSSI at the
    /// new distance, to first order about the prediction (saves the second `log`).
    @discardableResult
    public mutating func update(
        rssi z: Double, rssiAt1m: Double, at t: Double, k: Double, configuration c: RangingFilterConfiguration
    ) -> Double {
        // Acceleration noise between quiet and maneuvering, by how biased the innovations have been
        // lately: a lagging filter sees readings persistently on one side of its prediction, which
        // a mean detects long before the squared innovation grows past the shadowing's scatter.
        let w = min(max(abs(innovation) / c.maneuverThreshold - 1, 0), 1)
        // Quiet noise scales with d² (the reading's own noise does, in metres), so a beacon drifts by
        // the same fraction of its distance at any range; a maneuver's is absolute (a person's turn).
        let q = c.quietAcceleration * distance * distance + w * c.maneuverAcceleration
        let dt = t - time
        if dt > 0 {
            // x ← F x, P ← F P Fᵀ + Q with F = [1 dt; 0 1], Q = q [dt³/3 dt²/2; dt²/2 dt].
            let qdt = q * dt
            distance += speed * dt
            p00 += dt * (2 * p01 + dt * p11) + qdt * dt * dt * (1.0 / 3)
            p01 += dt * p11 + qdt * dt * 0.5
            p11 += qdt
            time = t
        }
        let d = max(distance, Self.minimumDistance)
        let h = -k / d  // ∂RSSI/∂d at the estimate
        let predicted = rssiAt1m - k * log(d)
        let y = z - predicted
        let r = c.measurementSigmaDB * c.measurementSigmaDB
        let s = h * h * p00 + r
        let sInverse = 1 / s
        let k0 = p00 * h * sInverse
        let k1 = p01 * h * sInverse
        distance = min(max(d + k0 * y, Self.minimumDistance), Self.maximumDistance)
        speed = min(max(speed + k1 * y, -c.maximumSpeed), c.maximumSpeed)
        let n00 = p00 - k0 * h * p00
        let n01 = p01 - k0 * h * p01
        p11 -= k1 * h * p01
        p00 = n00
        p01 = n01
        innovation += c.innovationSmoothing * (y * sInverse.squareRoot() - innovation)
        return predicted + h * (distance - d)
    }

    /// The distance predicted at `t` (≥ the last update), and its standard deviation.
    public func estimate(at t: Double) -> (distance: Double, sigma: Double) {
        let dt = max(t - time, 0)
        let d = min(max(distance + speed * dt, Self.minimumDistance), Self.maximumDistance)
        let v = p00 + dt * (2 * p01 + dt * p11)
        return (d, max(v, 0).squareRoot())
    }
}
