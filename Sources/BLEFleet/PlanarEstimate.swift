import Foundation

/// A point in the plane and its uncertainty, the state of the presence filters' Kalman filters. The axes are
/// independent and alike (a fix's error is a radius), so one variance serves both.
struct PlanarEstimate: Sendable, Equatable {
    var x: Double
    var y: Double
    /// Per axis, m².
    var variance: Double

    /// Where the fix says, as certain as it says.
    init(_ fix: PositionSolver.Fix) {
        x = fix.x
        y = fix.y
        variance = Self.measurementVariance(fix)
    }

    /// Per axis, m²: a fix's error is the radius of one standard deviation in the plane.
    static func measurementVariance(_ fix: PositionSolver.Fix) -> Double { fix.error * fix.error / 2 }

    func squaredDistance(to fix: PositionSolver.Fix) -> Double {
        (fix.x - x) * (fix.x - x) + (fix.y - y) * (fix.y - y)
    }

    /// ln of the normal density of the fix about this estimate, less the constant ln 2π.
    func logLikelihood(of fix: PositionSolver.Fix) -> Double {
        let s = variance + Self.measurementVariance(fix)
        return -log(s) - squaredDistance(to: fix) / (2 * s)
    }

    /// The Kalman correction by one fix.
    mutating func correct(by fix: PositionSolver.Fix) {
        let k = variance / (variance + Self.measurementVariance(fix))
        x += k * (fix.x - x)
        y += k * (fix.y - y)
        variance *= 1 - k
    }
}
