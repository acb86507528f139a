import BLEFleet
import Foundation

/// Room presence and position across gateways (docs/PRESENCE.md): the office scenario scored against its ground
/// truth, the fleet's algorithm beside the ESPresense companion's default (Nadaraya–Watson), on the same readings.
///
/// Arguments: `--seconds S` of virtual time (default 3600), `--seed N` (default 1); to try other presence settings
/// on the same data, `--dwell-s`, `--still-dwell-s`, `--still-after-s`, `--margin-m`, `--walking-speed-mps`;
/// `--scenario PATH` scores another scenario with a `site:` (another placement of the gateways). `--misses` adds where
/// the walkers' wrong seconds were, how far each stage lags behind them, and every room change of a tag standing
/// still. When scoring fails or a target (`PresenceScore.missedTargets`) is missed, `blegateway-bench` exits 1 at the
/// end.
func runPresenceBenchmark(arguments: [String]) async {
    func value(_ name: String, _ fallback: Double) -> Double { benchmarkOption(arguments, name, fallback) }
    var setup = PresenceScoreSetup()
    setup.seconds = value("--seconds", 3600)
    setup.seed = UInt64(value("--seed", 1))
    setup.lagTable = arguments.contains("--misses")
    if let i = arguments.firstIndex(of: "--scenario"), i + 1 < arguments.count { setup.scenarioPath = arguments[i + 1] }
    let given = { (name: String) in arguments.contains(name) ? value(name, .nan) : nil }
    let (dwell, stillDwell, stillAfter, margin, speed) =
        (
            given("--dwell-s"), given("--still-dwell-s"), given("--still-after-s"), given("--margin-m"),
            given("--walking-speed-mps")
        )
    setup.tune = { p in
        if let dwell { p.dwellS = dwell }
        if let stillDwell { p.stillDwellS = stillDwell }
        if let stillAfter { p.stillAfterS = stillAfter }
        if let margin { p.marginM = margin }
        if let speed { p.walkingSpeedMPS = speed }
    }
    let started = ContinuousClock.now
    do {
        let score = try await scorePresence(setup)
        print(
            "presence: scored \(Int(setup.seconds)) s of \(setup.scenarioPath), seed \(setup.seed), "
                + "in \(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s")
        print(score.table())
        if arguments.contains("--misses") { print(score.missTable()) }
        // A check, not only a report: a missed target fails the run (docs/PRESENCE.md lists them).
        let missed = score.missedTargets
        print(missed.isEmpty ? "presence: every target met" : "presence: targets missed:")
        for m in missed { print("- \(m)") }
        if !missed.isEmpty { failedBenchmarkChecks.withLock { $0.append("presence: \(missed.count) targets missed") } }
    } catch {
        print("presence: scoring failed: \(error)")
        failedBenchmarkChecks.withLock { $0.append("presence: scoring failed") }
    }
}
