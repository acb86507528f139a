import Foundation

/// A tag's position from several gateways' distances (docs/PRESENCE.md, "Position"): a robust weighted least-squares
/// fit in the plane of the tag's height, by Gauss–Newton with Levenberg–Marquardt damping and a Huber loss (each
/// distance weighted by its own accuracy; a distance far off the others' consensus loses weight instead of dragging
/// the fit). With fewer than three gateways, a weighted centroid. Pure arithmetic, no state.
public enum PositionSolver {
    /// One gateway's view of the tag.
    public struct Range: Sendable, Equatable {
        public var gateway: SiteDescription.Vec3
        /// Straight-line distance, metres.
        public var distance: Double
        /// One standard deviation of `distance`, metres.
        public var accuracy: Double

        public init(gateway: SiteDescription.Vec3, distance: Double, accuracy: Double) {
            self.gateway = gateway
            self.distance = distance
            self.accuracy = accuracy
        }
    }

    public enum Method: String, Sendable {
        /// Least squares over three or more gateways.
        case trilateration
        /// Fewer than three gateways with positions: their positions weighted by nearness.
        case centroid
    }

    public struct Fix: Sendable, Equatable {
        public var x: Double
        public var y: Double
        /// Radius of one standard deviation of the position, metres.
        public var error: Double
        public var method: Method
        /// For a fit: whether the distances agree with one point (the weighted residuals within what the accuracies
        /// allow). False means contradictory distances: the point is the least bad, not a position to trust.
        public var consistent: Bool
    }

    /// Huber's constant, in standard deviations: residuals beyond it count linearly, not squared.
    static let huber = 1.5
    /// Weighted residuals averaging beyond this many standard deviations are a contradiction.
    static let contradiction = 3.0
    /// No distance is trusted to better than this (the ranging's own accuracy can be optimistic close up).
    static let minimumAccuracy = 0.3

    /// The horizontal distance at the tag's height `z`: a gateway on the ceiling 1.3 m above a tag that reads
    /// 1.0 m is right above it.
    static func horizontal(_ r: Range, z: Double) -> Double {
        let dz = r.gateway.z - z
        return (max(r.distance * r.distance - dz * dz, 0.01)).squareRoot()
    }

    /// The tag's position at height `z`, or nil without ranges.
    public static func solve(_ ranges: [Range], z: Double) -> Fix? {
        guard !ranges.isEmpty else { return nil }
        let h = ranges.map { horizontal($0, z: z) }
        let sigma = zip(ranges, h).map { max($0.accuracy, minimumAccuracy, 0.05 * $1) }
        // The centroid weighted by 1/d: the start of a fit, and the answer below three gateways.
        var cw = 0.0
        var cx = 0.0
        var cy = 0.0
        for (r, d) in zip(ranges, h) {
            let w = 1 / max(d, 0.1)
            cw += w
            cx += w * r.gateway.x
            cy += w * r.gateway.y
        }
        cx /= cw
        cy /= cw
        guard ranges.count >= 3 else {
            let error = zip(h, sigma).map { $0 + $1 }.reduce(0, +) / Double(h.count)
            return Fix(x: cx, y: cy, error: error, method: .centroid, consistent: true)
        }
        var x = cx
        var y = cy
        var lambda = 1e-3
        func cost(_ px: Double, _ py: Double) -> Double {
            var c = 0.0
            for (i, r) in ranges.enumerated() {
                let u = abs(h[i] - hypot(px - r.gateway.x, py - r.gateway.y)) / sigma[i]
                c += u <= huber ? u * u / 2 : huber * (u - huber / 2)
            }
            return c
        }
        var current = cost(x, y)
        var normal = (a: 0.0, b: 0.0, c: 0.0)
        for _ in 0..<50 {
            // Normal equations with Huber's weights (iteratively reweighted): [a b; b c] δ = g.
            var a = 0.0
            var b = 0.0
            var c = 0.0
            var gx = 0.0
            var gy = 0.0
            for (i, r) in ranges.enumerated() {
                let dx = x - r.gateway.x
                let dy = y - r.gateway.y
                let f = max(hypot(dx, dy), 1e-6)
                let jx = dx / f
                let jy = dy / f
                let res = h[i] - f
                let u = abs(res) / sigma[i]
                let w = (u <= huber ? 1 : huber / u) / (sigma[i] * sigma[i])
                a += w * jx * jx
                b += w * jx * jy
                c += w * jy * jy
                gx += w * jx * res
                gy += w * jy * res
            }
            normal = (a, b, c)
            var improved = false
            while lambda < 1e6 {
                let da = a + lambda * max(a, 1e-9)
                let dc = c + lambda * max(c, 1e-9)
                let det = da * dc - b * b
                guard abs(det) > 1e-12 else {
                    lambda *= 10
                    continue
                }
                let sx = (dc * gx - b * gy) / det
                let sy = (da * gy - b * gx) / det
                let next = cost(x + sx, y + sy)
                if next <= current {
                    x += sx
                    y += sy
                    improved = abs(current - next) > 1e-9 || hypot(sx, sy) > 1e-4
                    current = next
                    lambda = max(lambda / 10, 1e-7)
                    break
                }
                lambda *= 10
            }
            if !improved { break }
        }
        // Covariance s²(JᵀWJ)⁻¹, with s² the weighted residuals' variance per degree of freedom (at least 1: the
        // accuracies are the floor).
        var chi = 0.0
        for (i, r) in ranges.enumerated() {
            let u = (h[i] - hypot(x - r.gateway.x, y - r.gateway.y)) / sigma[i]
            chi += u * u
        }
        let freedom = Double(ranges.count - 2)
        let s2 = max(chi / freedom, 1)
        let det = normal.a * normal.c - normal.b * normal.b
        let error = det > 1e-12 ? (s2 * (normal.a + normal.c) / det).squareRoot() : h.max()!
        let consistent = (chi / Double(ranges.count)).squareRoot() <= contradiction
        return Fix(x: x, y: y, error: min(error, 1_000), method: .trilateration, consistent: consistent)
    }
}
