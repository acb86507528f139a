import BLEDomain
import BLEGateway
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration

extension EndToEndSuites {
    /// New scan parameters on a running source, against the simulator's controller over its H4 socket: the supervisor
    /// restarts only its scanner with them (no adapter reset, no new adapter state), and the controller scans as told.
    @Suite(.timeLimit(.minutes(2)))
    struct RemoteConfigScanUpdateTests {
        /// One iBeacon that answers scan requests with its name: passive scanning never sees a scan response, active does.
        static let yaml = """
            name: scan-update
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-a, position: [0, 0]}]
            beacons:
              - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1, position: [2, 0],
                 scan_response_name: Beacon-1}
            """

        final class Observed: @unchecked Sendable {
            let lock = NSLock()
            var reports: [AdapterReport] = []
            var sightings: [(time: Double, scanResponse: Bool)] = []
        }

        @Test func newScanParametersRestartOnlyTheScannerAndTheControllerScansWithThem() async throws {
            signal(SIGPIPE, SIG_IGN)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
                "scanupd-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: dir) }
            let clock = ScaledClock(factor: 2)
            var options = SimulatorOptions(socketDirectory: dir.path)
            options.duration = 200
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(Self.yaml), options: options, clock: clock,
                pacing: .clock(batch: .milliseconds(20)))
            let source = HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-a")), mode: .exclusive,
                scan: GatewayConfiguration.Scan(),
                clock: clock, logger: Logger(label: "test"))
            #expect(source.appliesScanParametersLive)
            let seen = Observed()
            let sim = Task { try await simulator.run() }
            let gateway = Task {
                try await source.run(
                    adapter: { r in seen.lock.withLock { seen.reports.append(r) } },
                    sighting: { s in
                        seen.lock.withLock { seen.sightings.append((clock.now().seconds, s.isScanResponse)) }
                    })
            }
            defer {
                gateway.cancel()
                sim.cancel()
            }
            func waitFor(_ what: String, _ done: () -> Bool) async throws {
                try await waitUntil(what, limit: .seconds(20)) { done() }
            }
            try await waitFor("passive sightings") { seen.lock.withLock { seen.sightings.count >= 20 } }
            #expect(seen.lock.withLock { seen.sightings.allSatisfy { !$0.scanResponse } }, "passive: no scan responses")
            let reportsBefore = seen.lock.withLock { seen.reports }
            #expect(reportsBefore.last?.state == .poweredOn)

            var scan = GatewayConfiguration.Scan()
            scan.active = true
            scan.intervalMS = 60
            scan.windowMS = 30
            let changedAt = clock.now().seconds
            source.updateScan(scan)
            #expect(source.scan == scan)
            try await waitFor("scan responses") { seen.lock.withLock { seen.sightings.contains { $0.scanResponse } } }
            try await waitFor("sightings after the change") {
                seen.lock.withLock { seen.sightings.filter { $0.time > changedAt && !$0.scanResponse }.count >= 20 }
            }
            // Only the scanner restarted: no adapter state was published, no recovery step ran.
            #expect(seen.lock.withLock { seen.reports } == reportsBefore)
            let stats = try #require(source.lifecycleStatistics)
            #expect(stats.attempts.isEmpty && stats.climbs == 0, "\(stats)")

            // And back: passive again, the scan responses stop (after the ones already on their way).
            scan.active = false
            source.updateScan(scan)
            let passiveAgain = clock.now().seconds + 1
            try await waitFor("passive sightings again") {
                seen.lock.withLock { seen.sightings.filter { $0.time > passiveAgain }.count >= 20 }
            }
            #expect(seen.lock.withLock { seen.sightings.filter { $0.time > passiveAgain && $0.scanResponse }.isEmpty })
            #expect(seen.lock.withLock { seen.reports } == reportsBefore)
        }
    }
}
