import Foundation

/// Plane geometry for rooms: polygons in metres, corners in order (either direction), edges between neighbours and
/// from the last corner back to the first.
public enum Geometry {
    public typealias Point = SiteDescription.Point

    /// Signed area (shoelace); positive when the corners run anticlockwise.
    public static func area(_ polygon: [Point]) -> Double {
        var s = 0.0
        for i in polygon.indices {
            let a = polygon[i]
            let b = polygon[(i + 1) % polygon.count]
            s += a.x * b.y - b.x * a.y
        }
        return s / 2
    }

    /// Whether `p` lies inside (even–odd rule; a point on an edge may go either way).
    public static func contains(_ polygon: [Point], _ p: Point) -> Bool {
        var inside = false
        var j = polygon.count - 1
        for i in polygon.indices {
            let a = polygon[i]
            let b = polygon[j]
            if (a.y > p.y) != (b.y > p.y), p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x { inside.toggle() }
            j = i
        }
        return inside
    }

    /// Distance from `p` to the polygon's boundary: positive inside, negative outside.
    public static func signedDistance(_ polygon: [Point], _ p: Point) -> Double {
        var best = Double.infinity
        for i in polygon.indices {
            best = min(best, segmentDistance(p, polygon[i], polygon[(i + 1) % polygon.count]))
        }
        return contains(polygon, p) ? best : -best
    }

    public static func segmentDistance(_ p: Point, _ a: Point, _ b: Point) -> Double {
        let dx = b.x - a.x
        let dy = b.y - a.y
        let len2 = dx * dx + dy * dy
        let t = len2 == 0 ? 0 : max(0, min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2))
        return hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy))
    }
}
