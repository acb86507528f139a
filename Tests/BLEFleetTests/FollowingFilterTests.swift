import BLESimulator
import Foundation
import Testing

@testable import BLEFleet

/// The two-model filter on fixes alone: it follows a walk from its first seconds, and the scatter of a tag standing
/// still does not make it walk.
struct FollowingFilterTests {
    /// A fix at (x, y) with `error` and a seeded Gaussian scatter of `error / √2` per axis (what the fix claims).
    static func fix(_ x: Double, _ y: Double, error: Double, _ i: UInt64, seed: UInt64 = 7) -> PositionSolver.Fix {
        let r = SimRandom(seed: seed)
        let s = error / 2.0.squareRoot()
        return PositionSolver.Fix(
            x: x + s * r.gaussian(1, i), y: y + s * r.gaussian(2, i), error: error, method: .trilateration,
            consistent: true)
    }

    @Test func aWalkIsFollowedWithinSecondsWhileTheQuietFilterStaysBehind() {
        // 60 s standing at the origin, then walking along x at 1.2 m/s; fixes scatter with 1 m error.
        var following = FollowingFilter(fix: Self.fix(0, 0, error: 1, 0), now: 0)
        var quiet: PositionFilter? = nil
        var behind = (following: 0.0, quiet: 0.0)
        for i in 1...66 {
            let x = i <= 60 ? 0 : 1.2 * Double(i - 60)
            let f = Self.fix(x, 0, error: 1, UInt64(i))
            following.update(f, now: Double(i), speed: 1.5)
            quiet = PositionFilter.update(quiet, fix: f, floor: "ground", now: Double(i), speed: 1.5)
            if i == 60 { #expect(!following.moving, "judged walking while standing") }
            if i > 60 {
                behind.following += abs(following.x - x)
                behind.quiet += abs(quiet!.x - x)
            }
        }
        #expect(following.moving)
        // Over the walk's first six seconds, on average less than a metre behind, and a third less than the quiet
        // filter (0.66 against 1.04 m with this seed).
        #expect(behind.following / 6 < 1, "\(behind)")
        #expect(behind.following < behind.quiet * 0.75, "\(behind)")
    }

    @Test func aTagStandingStillIsMostlyJudgedStillAndThenStaysWhereItStands() {
        var following = FollowingFilter(fix: Self.fix(5, 5, error: 1.2, 0, seed: 11), now: 0)
        var walking = 0
        var worstWhileStill = 0.0
        for i in 1...600 {
            following.update(Self.fix(5, 5, error: 1.2, UInt64(i), seed: 11), now: Double(i), speed: 1.5)
            if following.moving {
                walking += 1
            } else if i > 10 {
                worstWhileStill = max(worstWhileStill, hypot(following.x - 5, following.y - 5))
            }
        }
        // Independent scatter as large as the fixes claim: a run of it sometimes reads as a few steps (35 of the
        // 600 s with this seed), and the estimate then follows the fixes for those seconds, up to 3 m off, which is
        // why the engine uses this filter only for tags that changed room lately.
        #expect(walking < 60, "judged walking \(walking) of 600 s")
        // Judged still again, it starts from where such a run left it (1.2 m off at worst here) and settles back.
        #expect(worstWhileStill < 1.5, "strayed \(worstWhileStill) m while judged still")
    }

    @Test func aStopIsSeenAtOnce() {
        // Walking along x for 20 s, then standing: within a few seconds the quiet model has it, and it stays put.
        var following = FollowingFilter(fix: Self.fix(0, 0, error: 1, 0, seed: 3), now: 0)
        for i in 1...20 {
            following.update(Self.fix(1.2 * Double(i), 0, error: 1, UInt64(i), seed: 3), now: Double(i), speed: 1.5)
        }
        #expect(following.moving)
        for i in 21...40 { following.update(Self.fix(24, 0, error: 1, UInt64(i), seed: 3), now: Double(i), speed: 1.5) }
        #expect(!following.moving)
        #expect(abs(following.x - 24) < 0.6, "at \(following.x)")
    }
}
