import Foundation
import Testing

@testable import BLEFleet

/// The position fit: exact distances give the point back; one distance far off the consensus loses its pull (the
/// robust loss) when there are gateways to outvote it; distances that fit no point are called contradictory.
struct PositionSolverTests {
    typealias V = SiteDescription.Vec3
    static let square = [V(0, 0, 2.5), V(10, 0, 2.5), V(10, 10, 2.5), V(0, 10, 2.5)]

    static func ranges(_ gateways: [V], to p: (Double, Double), z: Double = 1.2, accuracy: Double = 0.5)
        -> [PositionSolver.Range]
    {
        gateways.map {
            let d = ((p.0 - $0.x) * (p.0 - $0.x) + (p.1 - $0.y) * (p.1 - $0.y) + (z - $0.z) * (z - $0.z)).squareRoot()
            return PositionSolver.Range(gateway: $0, distance: d, accuracy: accuracy)
        }
    }

    @Test(arguments: [(3.0, 4.0), (7.5, 1.0), (5.0, 5.0), (9.0, 9.5)])
    func exactDistancesFromThreeGatewaysGiveThePointBack(_ x: Double, _ y: Double) throws {
        let fix = try #require(PositionSolver.solve(Self.ranges(Array(Self.square.prefix(3)), to: (x, y)), z: 1.2))
        #expect(fix.method == .trilateration)
        #expect(fix.consistent)
        #expect(hypot(fix.x - x, fix.y - y) < 0.01)
    }

    @Test func oneDistanceAtTheWrongScaleIsOutvotedByTheOthers() throws {
        var r = Self.ranges(Self.square + [V(5, 12, 2.5)], to: (3, 4))
        r[2].distance *= 3.28  // feet, not metres
        let robust = try #require(PositionSolver.solve(r, z: 1.2))
        // A plain least-squares fit is dragged metres away; the robust one stays near the truth.
        #expect(hypot(robust.x - 3, robust.y - 4) < 1.0)
    }

    @Test func distancesThatFitNoPointAreContradictory() throws {
        // Both say "2 m" from gateways 10 m apart, the third says 2 m too.
        let r = Self.square.prefix(3).map { PositionSolver.Range(gateway: $0, distance: 2, accuracy: 0.3) }
        let fix = try #require(PositionSolver.solve(Array(r), z: 1.2))
        #expect(!fix.consistent)
    }

    @Test func belowThreeGatewaysTheAnswerIsACentroidNearerTheNearerGateway() throws {
        let fix = try #require(PositionSolver.solve(Self.ranges([V(0, 0, 1.2), V(10, 0, 1.2)], to: (2, 0)), z: 1.2))
        #expect(fix.method == .centroid)
        #expect(fix.x < 5 && fix.x > 0)
        #expect(PositionSolver.solve([], z: 1) == nil)
    }
}
