import BLEDomain
import BLEGateway
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

extension EndToEndSuites {
    /// Peripherals configured remotely, applied without a restart: a retained per-gateway document that names a sensor
    /// makes the gateway connect it and subscribe; a document without it lets it go.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct PeripheralRemoteConfigTests {
        static let scenario = """
            name: remote-peripherals
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-rc, position: [0, 0, 2]}]
            peripherals:
              - {name: s, local_name: "Sensor S", service_uuids: ["181A"], address: "00:1B:DC:50:00:01", position: [2, 0, 1], interval_ms: 100, notify_interval_ms: 250}
            """

        @Test func aRemoteDocumentAddsThenRemovesAPeripheralWithoutARestart() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let clock = ScaledClock(factor: 2)
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(Self.scenario),
                options: SimulatorOptions(socketDirectory: f.directory.appendingPathComponent("sim").path),
                clock: clock,
                pacing: .clock(batch: .milliseconds(20)))
            var c = f.configuration()
            c.scan.active = true
            let base = "\(f.prefix)/\(f.gateway)/peripherals/001bdc500001"
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/#")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))
            let runtime = try GatewayRuntime(
                configuration: c,
                makeSource: { role in
                    HCISightingSource(
                        spec: .unix(path: simulator.socketPath(for: "gw-rc")), mode: .exclusive, scan: c.scan,
                        clock: clock, logger: Logger(label: "test"), role: role)
                },
                clock: clock, clockSynchronized: { true })
            let sim = Task { try await simulator.run() }
            let gateway = Task { try await runtime.run() }
            defer {
                gateway.cancel()
                sim.cancel()
            }
            // Scanning, and nothing configured to connect: the sensor is only a sighting.
            try await EndToEndSuites.waitFor("scanning", limit: .seconds(20)) {
                !observer.beacons(after: 0).isEmpty
            }
            #expect(observer.states("\(base)/state").isEmpty)

            let add =
                #"{"version": 1, "peripherals": [{"address": "00:1B:DC:50:00:01", "name": "s", "subscribe": [{"characteristic": "2A6E"}]}]}"#
            try await observer.publish(f.configTopic, Array(add.utf8))
            try await EndToEndSuites.waitFor("connected and notifying", limit: .seconds(20)) {
                observer.states("\(base)/state").last?["state"] as? String == "connected"
                    && !observer.states("\(base)/char/2a6e").isEmpty
            }
            #expect(observer.states(f.stateTopic).last?["status"] as? String == "applied")

            try await observer.publish(f.configTopic, Array(#"{"version": 2, "peripherals": []}"#.utf8))
            try await EndToEndSuites.waitFor("let go", limit: .seconds(20)) {
                observer.states("\(base)/state").last?["state"] as? String == "disconnected"
            }
            #expect(observer.states("\(base)/state").last?["reason"] as? String == "no longer wanted")
            try await EndToEndSuites.waitFor("the simulator's link is gone", limit: .seconds(10)) {
                simulator.nodes[0].links.isEmpty
            }
        }
    }
}
