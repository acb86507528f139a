import BLEDomain
import BLEGateway
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration

extension EndToEndSuites {
    /// Two adapters through the whole gateway: two simulated controllers side by side (two H4 sockets), the primary
    /// scanning and the secondary keeping a sensor connected, against a real mosquitto. Each dongle is pulled out in
    /// turn; the other carries both duties until it is back and has stayed for the handback time. Virtual seconds.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct DualAdapterEndToEndTests {
        static let scenario = """
            name: two-dongles
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-1, position: [0, 0, 2]}, {id: gw-2, position: [0, 0.1, 2]}]
            beacons:
              - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1, position: [2, 0, 1]}
            peripherals:
              - {name: p1, local_name: "Sensor 1", service_uuids: ["181A"], address: "00:1B:DC:20:00:01", position: [0, 2, 1], interval_ms: 100, notify_interval_ms: 500}
            faults:
              - {at_s: 20.3, gateway: gw-2, type: unplug, duration_s: 10}
              - {at_s: 45.3, gateway: gw-1, type: unplug, duration_s: 10}
            """

        static let gatewayConfig = """
            scan: {active: true, interval_ms: 50, window_ms: 50}
            connections: {max: 2, connect_timeout_s: 3}
            peripherals:
              - {address: "00:1B:DC:20:00:01", name: p1, subscribe: [{service: "181A", characteristic: "2A6E"}]}
            """

        static let sensor = "001bdc200001"

        @Test func eachAdapterCarriesBothDutiesWhileTheOtherIsUnpluggedAndGetsItsOwnBackAfterTheHandback() async throws
        {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let clock = ScaledClock(factor: 2)
            var options = SimulatorOptions(socketDirectory: f.directory.appendingPathComponent("sim").path)
            options.duration = 120
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(Self.scenario), options: options, clock: clock,
                pacing: .clock(batch: .milliseconds(20)))
            var c = f.configuration()
            c.remoteConfig.enabled = false
            c.publishing.healthIntervalSeconds = 5
            var reader = YAMLConfigurationReader()
            let file = try reader.read(Self.gatewayConfig)
            c.scan = file.scan
            c.connections = file.connections
            c.peripherals = file.peripherals
            let one = simulator.socketPath(for: "gw-1")
            let two = simulator.socketPath(for: "gw-2")
            c.adapter.device = "unix:\(one)"
            c.adapter.secondDevice = "unix:\(two)"
            let base = "\(f.prefix)/\(f.gateway)"
            let observer = try Observer(port: f.broker.port, filter: "\(base)/#")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))

            // Retries of an absent adapter at most 2 s apart: a replugged dongle is opened within 2 s.
            var lifecycle = AdapterLifecycle.Configuration()
            lifecycle.maxBackoff = .seconds(2)
            let log = Logger(label: "test")
            let runtime = try GatewayRuntime(
                configuration: c,
                makeSource: { role in
                    DualAdapterSource(
                        primary: .unix(path: one), secondary: .unix(path: two), scan: c.scan, clock: clock,
                        logger: log, lifecycle: lifecycle, role: role, handback: .seconds(5))
                },
                clock: clock, logger: log, clockSynchronized: { true })
            let sim = Task { try await simulator.run() }
            let gateway = Task { try await runtime.run() }
            defer {
                gateway.cancel()
                sim.cancel()
            }
            func at(_ t: Double) async throws {
                while clock.now() < .seconds(t) { try await Task.sleep(for: .milliseconds(20)) }
            }
            let origin = clock.unixTime() - clock.now().seconds
            func linked(_ node: Int) -> Bool {
                simulator.nodes[node].links.contains { $0.peer.topicComponent == Self.sensor }
            }
            func last(_ topic: String) -> [String: Any]? { observer.states("\(base)/\(topic)").last }
            func roles(_ slot: String) -> [String] { last("adapters/\(slot)")?["roles"] as? [String] ?? ["?"] }
            func states() -> [(t: Double, state: String, reason: String)] {
                observer.states("\(base)/peripherals/\(Self.sensor)/state").map {
                    (
                        ($0["since"] as? Double ?? 0) - origin, $0["state"] as? String ?? "?",
                        $0["reason"] as? String ?? ""
                    )
                }
            }
            func text() -> String { states().map { "\(Int($0.t)) \($0.state) \($0.reason)" }.joined(separator: "; ") }
            /// Beacon samples the gateway heard in [from, to) (their `ts`).
            func samples(_ from: Double, _ to: Double) -> Int {
                observer.lock.withLock {
                    observer.messages.filter { $0.topic.hasPrefix("\(base)/beacons/") }
                        .compactMap { ($0.json["ts"] as? Double).map { $0 - origin } }.filter { $0 >= from && $0 < to }
                        .count
                }
            }

            // Both up: the primary scans, the secondary holds the link.
            try await EndToEndSuites.waitFor("split duties and the sensor linked", limit: .seconds(30)) {
                roles("primary") == ["scan"] && roles("secondary") == ["connect"]
                    && last("peripherals/\(Self.sensor)/state")?["state"] as? String == "connected"
            }
            #expect(linked(1) && !linked(0), "the link is the secondary's")
            #expect(
                states().first { $0.state == "connected" }.map { $0.t < 10 } == true,
                "connected at the start, not only when a fault moved the duty: \(text())")
            #expect(last("adapter")?["slot"] as? String == "primary")

            // gw-2 pulled out at 20.3: the primary takes the connections; the link is made again through it.
            try await at(29)
            #expect(roles("primary") == ["scan", "connect"])
            #expect(last("adapters/secondary")?["state"] as? String != "poweredOn")
            #expect(states().contains { $0.t >= 20 && $0.t < 22 && $0.reason == "adapter lost" }, "\(text())")
            #expect(states().contains { $0.t >= 20.3 && $0.t < 25 && $0.state == "connected" }, "\(text())")
            #expect(linked(0), "the primary holds the link while the secondary is out")
            #expect(samples(21, 29) > 0, "the primary kept scanning")

            // gw-2 back at 30.3; 5 s later the link moves back to it, ended by the gateway and made again at once.
            try await at(44)
            #expect(roles("primary") == ["scan"] && roles("secondary") == ["connect"])
            let handedBack = states().first { $0.t >= 35 && $0.reason == "handed over to the other adapter" }
            #expect(handedBack.map { $0.t < 38 } == true, "\(text())")
            #expect(
                states().contains { $0.t >= (handedBack?.t ?? 99) && $0.t < 40 && $0.state == "connected" }, "\(text())"
            )
            #expect(linked(1) && !linked(0), "back on the secondary")

            // gw-1 pulled out at 45.3: the secondary scans too; the link it holds is not touched.
            try await at(54)
            #expect(roles("secondary") == ["scan", "connect"])
            #expect(
                last("adapter")?["slot"] as? String == "secondary"
                    && last("adapter")?["state"] as? String == "poweredOn")
            #expect(samples(47, 54) > 0, "the secondary scans for the gateway while the primary is out")
            #expect(!states().contains { $0.t >= 45 && $0.t < 54 && $0.state != "connected" }, "\(text())")

            // gw-1 back at 55.3, the scan back on it after the handback; the state topics end true.
            try await at(66)
            let late = try Observer(port: f.broker.port, filter: "\(base)/adapter/#")
            defer { late.stop() }
            let slots = try Observer(port: f.broker.port, filter: "\(base)/adapters/+")
            defer { slots.stop() }
            try await EndToEndSuites.waitFor("retained adapter states") {
                !late.states("\(base)/adapter").isEmpty && slots.states("\(base)/adapters/secondary").count == 1
                    && slots.states("\(base)/adapters/primary").count == 1
            }
            let gatewayAdapter = late.states("\(base)/adapter").last
            #expect(
                gatewayAdapter?["state"] as? String == "poweredOn" && gatewayAdapter?["slot"] as? String == "primary")
            #expect(gatewayAdapter?["roles"] as? [String] == ["scan"])
            for (slot, duty) in [("primary", "scan"), ("secondary", "connect")] {
                let s = slots.states("\(base)/adapters/\(slot)").last
                #expect(
                    s?["state"] as? String == "poweredOn" && s?["roles"] as? [String] == [duty], "\(slot): \(s ?? [:])")
            }
            #expect(last("peripherals/\(Self.sensor)/state")?["state"] as? String == "connected")
            #expect(linked(1) && !linked(0))
            #expect(samples(58, 66) > 0)
            // Health counts the moves: to the secondary at start, to the primary at 20, back at ~35, the scan to the
            // secondary at 45 and back at ~60.
            try await EndToEndSuites.waitFor("a health report") {
                observer.states("\(base)/health").last.map { ($0["adapters"] as? [String: Any]) != nil } == true
            }
            let adapters = observer.states("\(base)/health").last?["adapters"] as? [String: Any]
            #expect((adapters?["handovers"] as? Int).map { $0 >= 4 } == true, "\(adapters ?? [:])")
            let report = try SchemaValidation.problems(
                observer.lock.withLock { observer.messages }, prefix: f.prefix,
                directory: f.directory)
            #expect(report == nil, "\(report ?? "")")
        }
    }
}
