import Foundation
import Testing

/// The office scenario, a quarter of an hour of it, scored against the simulator's ground truth: the issue's targets
/// for static tags and position, with the baseline (the ESPresense companion's default) run on the same readings.
/// `make bench` scores the full hour (docs/BENCHMARKS.md). And a world the defaults were not tuned on, the flat.
struct PresenceScoringTests {
    static func scenario(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/scenarios/\(name).yaml").path
    }

    /// The flat (config/scenarios/flat.yaml): another geometry, gateways in three of its five rooms, people who sit
    /// for many minutes. Walkers and position meet their targets with room to spare; the tags standing half a metre
    /// from a wall do not: a wrong first room, kept by the hysteresis and later corrected, misses both the static
    /// tags' target and the room changes' (docs/BENCHMARKS.md, "Presence", says why). Held as a known issue, so that
    /// presence that meets them here is noticed.
    @Test(.timeLimit(.minutes(5)))
    func flatPresenceMeetsTheWalkersAndPositionTargetsAndMissesTheStandingTagsOnes() async throws {
        var setup = PresenceScoreSetup()
        setup.scenarioPath = Self.scenario("flat")
        setup.seconds = 900
        let score = try await scorePresence(setup)
        #expect(score.staticTags == 10 && score.walkers == 3, "scored \(score.staticTags) and \(score.walkers)")
        let missed = score.missed
        #expect(!missed.contains(.walkerRoom), "\(score.missedTargets) \(score.table())")
        #expect(!missed.contains(.positionGain), "\(score.missedTargets) \(score.table())")
        withKnownIssue("tags standing half a metre from a wall: a wrong first room, held, then corrected") {
            #expect(!missed.contains(.staticRoom), "\(score.table())")
            #expect(!missed.contains(.standingFlaps), "\(score.table())")
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func officePresenceMeetsItsTargetsAndBeatsTheBaselineOnTheSameReadings() async throws {
        var setup = PresenceScoreSetup()
        setup.scenarioPath = Self.scenario("office")
        setup.seconds = 900
        let score = try await scorePresence(setup)
        let ours = score.ours
        let base = score.baseline
        #expect(
            score.staticTags >= 20 && score.walkers == 4,
            "scored \(score.staticTags) static tags, \(score.walkers) walkers")
        // Every target of every world (the walkers': 89.7 % over this quarter hour, 88.7 % over the benchmark's hour),
        // and, in the world the defaults were tuned on, more: no room change at all, a median error under 1.5 m.
        #expect(score.missedTargets.isEmpty, "\(score.missedTargets) \(score.table())")
        #expect(ours.staticFlapsPerHour == 0, "\(score.table())")
        #expect(ours.medianError <= 1.5, "\(score.table())")
        #expect(ours.walkerRoomAccuracy > base.walkerRoomAccuracy, "\(score.table())")
    }
}
