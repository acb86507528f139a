import BLEDomain
import BLEHCI
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEGateway

extension EndToEndSuites {
    /// Remote documents that change what is not read per sighting — regions, scan parameters — against a real
    /// mosquitto, with the gateway running in this process.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct RemoteConfigLiveEndToEndTests {
        static func waitFor(_ what: String, limit: Duration = .seconds(15), _ done: () -> Bool) async throws {
            try await EndToEndSuites.waitFor(what, limit: limit, done)
        }

        /// The fixture's broker stop waits for mosquitto to exit (up to 10 s) with a blocking sleep loop; on a thread of
        /// its own, so it does not hold one of the few threads of the cooperative pool that every other test shares (on a
        /// two-core machine a stall there is seconds of virtual time for the ScaledClock tests running beside).
        static func stopping<T>(_ f: Fixture, _ body: () async throws -> T) async throws -> T {
            func stop() async {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    Thread {
                        f.broker.terminate()
                        done.resume()
                    }.start()
                }
            }
            do {
                let result = try await body()
                await stop()
                return result
            } catch {
                await stop()
                throw error
            }
        }

        @Test func aRetainedDocumentChangingRegionsTakesEffect() async throws {
            let f = try Fixture()
            try await Self.stopping(f) { try await regions(f) }
        }

        func regions(_ f: Fixture) async throws {
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            // The scripted source: devices named "A" and "B", each heard every 10 ms. No region in the local file.
            let (runtime, _, run) = try f.startStoppable(f.configuration())
            try await Self.waitFor("readings flowing") { observer.beacons(after: 0).count >= 2 }
            func region(_ id: String) -> [[String: Any]] { observer.states("\(f.prefix)/\(f.gateway)/regions/\(id)") }

            try await observer.publish(
                f.configTopic,
                Array(
                    """
                    {"version": 1, "regions": [{"id": "lab", "name_prefix": "A", "exit_timeout_s": 2}]}
                    """.utf8))
            try await Self.waitFor("lab determined") { region("lab").contains { $0["state"] as? String == "inside" } }
            let applied = try #require(observer.states(f.stateTopic).last { $0["version"] as? Int == 1 })
            #expect(applied["status"] as? String == "applied")
            #expect(applied["hash"] as? String == runtime.effectiveConfiguration.effectiveHash)
            // A new region is published unknown first, then determined by the next sighting of its device.
            let lab = region("lab")
            #expect(lab.first?["state"] as? String == "unknown", "\(lab)")
            #expect(lab.first?["event"] as? String == "determined")
            let unknownSeq = try #require(lab.first?["seq"] as? Int)
            let insideSeq = try #require(lab.first { $0["state"] as? String == "inside" }?["seq"] as? Int)
            #expect(unknownSeq < insideSeq)

            // Replaced whole: "lab" is removed (retained `removed`), "hall" is new.
            try await observer.publish(
                f.configTopic,
                Array(
                    """
                    {"version": 2, "regions": [{"id": "hall", "name_prefix": "B"}]}
                    """.utf8))
            try await Self.waitFor("hall determined") { region("hall").contains { $0["state"] as? String == "inside" } }
            #expect(region("lab").last?["state"] as? String == "removed", "\(region("lab"))")
            #expect(region("lab").last?["event"] as? String == "removed")
            #expect(region("hall").first?["state"] as? String == "unknown", "\(region("hall"))")
            #expect(runtime.effectiveConfiguration.regions.map(\.id) == ["hall"])

            // A region document that names no beacon is rejected and the regions in force stay.
            let before = observer.states(f.stateTopic).count
            try await observer.publish(f.configTopic, Array(#"{"version": 3, "regions": [{"id": "nowhere"}]}"#.utf8))
            try await Self.waitFor("rejected") { observer.states(f.stateTopic).count > before }
            let rejected = try #require(observer.states(f.stateTopic).last)
            #expect(rejected["status"] as? String == "rejected")
            #expect((rejected["errors"] as? [[String: Any]])?.first?["path"] as? String == "$.regions[0]")
            #expect(runtime.effectiveConfiguration.regions.map(\.id) == ["hall"])
            #expect(region("nowhere").isEmpty)

            await run.stop()
            try await EndToEndSuites.waitFor("the gateway's shutdown status") { observer.sawShutdown }
            #expect(EndToEndSuites.gaps(observer.seqs) == [])
        }

        /// The real source over the simulator's controller: a document turning on active scanning takes effect without
        /// a restart — `config/state` says applied with nothing under `restart_required`, scan responses appear on the
        /// raw stream, the adapter is not reset, and beacons keep being published.
        @Test func aDocumentChangingScanParametersTakesEffectWithoutARestart() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try Fixture()
            try await Self.stopping(f) { try await scanParameters(f) }
        }

        func scanParameters(_ f: Fixture) async throws {
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            let sockets = f.directory.appendingPathComponent("sim")
            var options = SimulatorOptions(socketDirectory: sockets.path)
            options.duration = 300
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(RemoteConfigScanUpdateTests.yaml),
                options: options, clock: ScaledClock(factor: 1),
                pacing: .clock(batch: .milliseconds(20)))
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            var c = f.configuration()
            c.publishing.rawAdvertisements = true
            c.publishing.rawMaxPerSecond = 50
            let source = HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-a")), mode: .exclusive,
                scan: c.scan, clock: SystemClock(), logger: Logger(label: "test"))
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            let task = Task { try await runtime.run() }
            defer { task.cancel() }

            func raws() -> [[String: Any]] {
                observer.lock.withLock { observer.messages.filter { $0.topic.contains("/raw/") }.map(\.json) }
            }
            let adapterTopic = "\(f.prefix)/\(f.gateway)/adapter"
            try await Self.waitFor("passive raw advertisements") { raws().count >= 10 }
            #expect(raws().allSatisfy { $0["scan_response"] as? Bool == false })
            let adapterStates = observer.states(adapterTopic).count

            try await observer.publish(
                f.configTopic,
                Array(
                    """
                    {"version": 1, "scan": {"active": true, "interval_ms": 60, "window_ms": 30}}
                    """.utf8))
            try await Self.waitFor("applied") { observer.states(f.stateTopic).contains { $0["version"] as? Int == 1 } }
            let state = try #require(observer.states(f.stateTopic).last { $0["version"] as? Int == 1 })
            #expect(state["status"] as? String == "applied")
            #expect(state["restart_required"] == nil, "\(state)")
            #expect(source.scan.active && source.scan.intervalMS == 60 && source.scan.windowMS == 30)
            let appliedSeq = try #require(state["seq"] as? Int)
            try await Self.waitFor("scan responses") { raws().contains { $0["scan_response"] as? Bool == true } }
            try await Self.waitFor("beacons after the change") { observer.beacons(after: appliedSeq).count >= 3 }
            #expect(observer.states(adapterTopic).count == adapterStates, "the adapter was not reset")
            #expect(source.lifecycleStatistics?.climbs == 0)
            task.cancel()
            _ = try? await task.value
        }
    }
}
