import BLEDomain
import BLEGateway
import BLESimulator
import BLETransport
import Foundation
import Logging
import Testing

/// The adapter lifecycle against the simulator's controller over its H4 socket: every fault the simulator knows,
/// one after another, and after each the gateway is scanning again (adapter state poweredOn, sightings flowing).
/// Both sides follow one `ScaledClock` running 5× faster than real time, so the drill takes about 20 s. (At 10× a
/// machine busy with other work stretched the gateway's reactions enough, in virtual time, to change which ladder
/// step a fault met.)
@Suite(.timeLimit(.minutes(2)))
struct AdapterRecoveryTests {
    static let yaml = """
        name: lifecycle-drill
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        beacons:
          - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1, position: [2, 0]}
        faults:
          - {at_s: 8, gateway: gw-a, type: hardware_error, hardware_code: 0x42, duration_s: 3}
          - {at_s: 25, gateway: gw-a, type: power_off, duration_s: 5}
          - {at_s: 45, gateway: gw-a, type: unplug, duration_s: 5}
          - {at_s: 65, gateway: gw-a, type: silence, duration_s: 10}
        """

    final class Observed: @unchecked Sendable {
        let lock = NSLock()
        var reports: [(Double, AdapterReport)] = []
        var sightings: [Double] = []
    }

    @Test func theAdapterRecoversFromHardwareErrorPowerLossUnplugAndSilenceAndScansAgain() async throws {
        // A write to a socket the simulator closed must be an error, not the end of the test process.
        signal(SIGPIPE, SIG_IGN)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lifecycle-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = ScaledClock(factor: 5)
        var options = SimulatorOptions(socketDirectory: dir.path)
        options.duration = 100
        let simulator = try Simulator(scenario: try ScenarioLoader.parse(Self.yaml), options: options, clock: clock,
                                      pacing: .clock(batch: .milliseconds(20)))
        var lifecycle = AdapterLifecycle.Configuration()
        lifecycle.silenceTimeout = .seconds(5)
        let source = HCISightingSource(
            spec: .unix(path: simulator.socketPath(for: "gw-a")), mode: .exclusive, scan: GatewayConfiguration.Scan(),
            clock: clock, logger: Logger(label: "test"), lifecycle: lifecycle)
        let seen = Observed()
        let sim = Task { try await simulator.run() }
        let gateway = Task {
            try await source.run(
                adapter: { r in seen.lock.withLock { seen.reports.append((clock.now().seconds, r)) } },
                sighting: { _ in seen.lock.withLock { seen.sightings.append(clock.now().seconds) } })
        }
        // 95 virtual seconds at 5× is 19 s of real time.
        while clock.now() < .seconds(95) { try await Task.sleep(for: .milliseconds(100)) }
        let stats = source.lifecycleStatistics
        gateway.cancel()
        sim.cancel()
        _ = await gateway.result
        _ = await sim.result

        let (reports, sightings) = seen.lock.withLock { (seen.reports, seen.sightings) }
        let states = reports.map { "\(String(format: "%.1f", $0.0)) \($0.1.state) \($0.1.reason ?? "")" }
        // Each fault was noticed and published as a recovery step, and each ended in poweredOn.
        func recovered(after t: Double, by step: String) -> Bool {
            guard let i = reports.firstIndex(where: { $0.0 >= t && $0.1.state == .resetting
                && $0.1.reason?.contains(step) == true }) else { return false }
            return reports[i...].contains { $0.1.state == .poweredOn }
        }
        #expect(recovered(after: 8, by: "reset_controller"), "hardware error: \(states)")
        // Not stable since the last fault: the climb starts above the step that cured it.
        #expect(recovered(after: 25, by: "recovery step"), "power loss: \(states)")
        #expect(recovered(after: 45, by: "power_cycle"), "unplug: \(states)")
        // Silence is noticed by the watchdog and cured; which step cures it depends on how long the machine took
        // over the earlier recoveries (the storm rule starts a climb higher when the last cure was recent).
        #expect(recovered(after: 65, by: "recovery step"), "silence: \(states)")
        #expect((stats?.silences ?? 0) >= 1, "the silence watchdog fired: \(states)")
        #expect(reports.last?.1.state == .poweredOn, "\(states)")
        // Scanning resumed after the last fault ended.
        #expect(sightings.contains { $0 > 80 })
        // The counters agree with what was published: one climb per outage (a fault that comes while a climb is still
        // under way joins it — on a busy machine two faults can fall into one climb), and every climb ended cured.
        let outages = zip(reports, reports.dropFirst()).filter { $0.0.1.state == .poweredOn && $0.1.1.state != .poweredOn }.count
        // How many outages four faults make depends on how fast the machine recovers (a fault during a climb joins
        // it; under load three faults have made two climbs); that each fault was cured is checked above.
        #expect(outages >= 1, "\(states)")
        #expect(stats?.climbs == outages, "\(states)")
        #expect(stats?.recoveries.values.reduce(0, +) == stats?.climbs, "\(states)")
    }
}
