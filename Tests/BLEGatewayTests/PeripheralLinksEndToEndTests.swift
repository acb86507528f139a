import BLEDomain
import BLEGateway
import BLEHCI
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration

extension EndToEndSuites {
    /// Peripheral links through the whole gateway: the simulator's controller over its H4 socket, the gateway's runtime
    /// (connection manager, ACL/L2CAP/ATT, GATT client, spool, MQTT) against a real mosquitto, and a subscriber reading
    /// what an operator would read. Both sides follow one `ScaledClock`; times below are virtual seconds.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct PeripheralLinksEndToEndTests {
        /// Five sensors near one gateway, and a fault drill: sensors that lose power and come back (supervision timeout
        /// 0x08), an adapter power toggle, an unplug, links that cannot be established (0x3E), and a sensor whose GATT
        /// server stops answering (the ATT timeout drops the link).
        static let scenario = """
            name: peripheral-drill
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-p, position: [0, 0, 2], max_connections: 8}]
            peripherals:
              - {name: p1, local_name: "Sensor 1", service_uuids: ["181A"], address: "00:1B:DC:20:00:01", position: [2, 0, 1], interval_ms: 100, notify_interval_ms: 200}
              - {name: p2, local_name: "Sensor 2", service_uuids: ["181A"], address: "00:1B:DC:20:00:02", position: [0, 2, 1], interval_ms: 100, notify_interval_ms: 200}
              - {name: p3, local_name: "Sensor 3", service_uuids: ["181A"], address: "00:1B:DC:20:00:03", position: [-2, 0, 1], interval_ms: 100, notify_interval_ms: 200}
              - {name: p4, local_name: "Sensor 4", service_uuids: ["181A"], address: "00:1B:DC:20:00:04", position: [0, -2, 1], interval_ms: 100, notify_interval_ms: 200}
              - {name: p5, local_name: "Thermo 5", service_uuids: ["181A"], address: "00:1B:DC:20:00:05", position: [3, 3, 1], interval_ms: 100, notify_interval_ms: 200}
            faults:
              - {at_s: 30, gateway: gw-p, type: peripheral_off, peripheral: p1, duration_s: 6}
              - {at_s: 38, gateway: gw-p, type: peripheral_off, peripheral: p2, duration_s: 7}
              - {at_s: 39, gateway: gw-p, type: peripheral_off, peripheral: p3, duration_s: 7}
              - {at_s: 48, gateway: gw-p, type: power_off, duration_s: 3}
              - {at_s: 60, gateway: gw-p, type: unplug, duration_s: 3}
              - {at_s: 69, gateway: gw-p, type: peripheral_off, peripheral: p4, duration_s: 6}
              - {at_s: 73, gateway: gw-p, type: connection_failure, duration_s: 7}
              - {at_s: 84, gateway: gw-p, type: gatt_silence, peripheral: p5, duration_s: 8}
            """

        static let gatewayConfig = """
            scan: {active: true, interval_ms: 50, window_ms: 50}
            connections: {max: 5, att_timeout_s: 4, rssi_interval_s: 2, connect_timeout_s: 3}
            peripherals:
              - {address: "00:1B:DC:20:00:01", name: p1, subscribe: [{service: "181A", characteristic: "2A6E"}], writable: [{characteristic: "2A06"}]}
              - {address: "00:1B:DC:20:00:02", name: p2, subscribe: [{service: "181A", characteristic: "2A6E"}]}
              - {address: "00:1B:DC:20:00:03", name: p3, subscribe: [{service: "181A", characteristic: "2A6E"}]}
              - {address: "00:1B:DC:20:00:04", name: p4, subscribe: [{service: "181A", characteristic: "2A6E"}]}
              - {name_prefix: "Thermo", subscribe: [{characteristic: "2A6F"}], read: [{characteristic: "2A29", interval_s: 2}]}
            """

        static let addresses = (1...5).map { "001bdc20000\($0)" }

        @Test func fivePeripheralsStayConnectedThroughTheFaultDrillAndTheStateTopicsEndTrue() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let dir = f.directory.appendingPathComponent("sim")
            let clock = ScaledClock(factor: 4)
            var options = SimulatorOptions(socketDirectory: dir.path)
            options.duration = 200
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(Self.scenario), options: options, clock: clock,
                pacing: .clock(batch: .milliseconds(20)))
            var c = f.configuration()
            c.remoteConfig.enabled = false
            var reader = YAMLConfigurationReader()
            let file = try reader.read(Self.gatewayConfig)
            c.scan = file.scan
            c.connections = file.connections
            c.peripherals = file.peripherals
            c.adapter.device = "unix:\(simulator.socketPath(for: "gw-p"))"
            let base = "\(f.prefix)/\(f.gateway)/peripherals"
            let observer = try Observer(port: f.broker.port, filter: "\(base)/#")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))

            var lifecycle = AdapterLifecycle.Configuration()
            lifecycle.silenceTimeout = .seconds(30)
            let runtime = try GatewayRuntime(
                configuration: c,
                makeSource: { role in
                    HCISightingSource(
                        spec: .unix(path: simulator.socketPath(for: "gw-p")), mode: .exclusive,
                        scan: c.scan, clock: clock, logger: Logger(label: "test"), lifecycle: lifecycle,
                        role: role)
                },
                clock: clock, clockSynchronized: { true })
            let sim = Task { try await simulator.run() }
            let gateway = Task { try await runtime.run() }
            defer {
                gateway.cancel()
                sim.cancel()
            }

            func at(_ t: Double) async throws {
                while clock.now() < .seconds(t) { try await Task.sleep(for: .milliseconds(20)) }
            }
            /// Notifications each sim link has handed to the host, by peer.
            func sent() -> [String: Int] {
                Dictionary(
                    simulator.nodes[0].links.map { ($0.peer.topicComponent, $0.notificationsSent) },
                    uniquingKeysWith: +)
            }
            func published(_ address: String, via: String = "notification") -> [[String: Any]] {
                observer.lock.withLock {
                    observer.messages.filter {
                        $0.topic.hasPrefix("\(base)/\(address)/char/") && $0.json["via"] as? String == via
                    }
                    .map(\.json)
                }
            }

            // A quiet window once all five are connected: every notification the simulator handed over reaches the
            // broker, in order.
            try await EndToEndSuites.waitFor("five links", limit: .seconds(60)) {
                Self.addresses.allSatisfy {
                    observer.states("\(base)/\($0)/state").last?["state"] as? String == "connected"
                }
                    && simulator.nodes[0].links.count == 5
            }
            try await at(clock.now().seconds + 1)
            let start = clock.now().seconds
            let sentBefore = sent()
            try await at(start + 6)
            let sentAfter = sent()
            let end = clock.now().seconds
            #expect(end < 30, "the window closed before the first fault (at \(end) s)")
            try await Task.sleep(for: .milliseconds(800))  // the last ones through the spool and the broker
            let origin = clock.unixTime() - clock.now().seconds
            for a in Self.addresses {
                let delta = (sentAfter[a] ?? 0) - (sentBefore[a] ?? 0)
                // Received by the gateway inside the window (its `ts`), wherever they are in the pipeline now.
                let got = published(a).filter {
                    ($0["ts"] as? Double).map { $0 - origin >= start && $0 - origin < end } ?? false
                }
                #expect(delta > 15, "\(a): the simulator sent \(delta) notifications in 6 s")
                // The window's ends are read at slightly different instants on the two sides: one value each.
                #expect(abs(got.count - delta) <= 2, "\(a): sent \(delta), published \(got.count)")
                let seqs = published(a).compactMap { $0["seq"] as? Int }
                let ts = published(a).compactMap { $0["ts"] as? Double }
                #expect(seqs == seqs.sorted() && ts == ts.sorted(), "\(a): in order")
            }
            // Decoded as the SIG characteristic it is: Temperature, sint16 in 0.01 °C (the simulator's ~20–23 °C).
            let value = published(Self.addresses[0]).last?["value"] as? [String: Any]
            #expect((value?["temperature_c"] as? Double).map { (15...30).contains($0) } == true, "\(value ?? [:])")

            try await at(104)
            func history(_ i: Int) -> [(t: Double, state: String, reason: String)] {
                observer.states("\(base)/\(Self.addresses[i])/state").map {
                    (
                        ($0["since"] as? Double ?? 0) - origin, $0["state"] as? String ?? "?",
                        $0["reason"] as? String ?? ""
                    )
                }
            }
            func text(_ i: Int) -> String {
                history(i).map { "\(Int($0.t)) \($0.state) \($0.reason)" }.joined(separator: "; ")
            }

            // Each sensor that lost power: supervision timeout, then connected within 1 s of advertising again
            // (it advertises every 100 ms; the power comes back at the fault's end).
            for (i, back) in [(0, 36.0), (1, 45.0), (2, 46.0)] {
                #expect(history(i).contains { $0.reason.contains("0x08 Connection Timeout") }, "p\(i + 1): \(text(i))")
                let reconnected = history(i).first { $0.t >= back && $0.state == "connected" }?.t
                #expect(reconnected.map { $0 - back <= 1.1 } == true, "p\(i + 1) back at \(back): \(text(i))")
            }
            // The adapter's power toggle and unplug take every link with them; every one comes back.
            for i in 0..<5 {
                #expect(
                    history(i).contains { $0.t >= 48 && $0.t < 54 && $0.reason == "adapter lost" },
                    "p\(i + 1): \(text(i))")
                #expect(
                    history(i).contains { $0.t >= 60 && $0.t < 66 && $0.reason == "adapter lost" },
                    "p\(i + 1): \(text(i))")
                #expect(
                    history(i).contains { $0.t >= 51 && $0.t < 60 && $0.state == "connected" }, "p\(i + 1): \(text(i))")
                #expect(
                    history(i).contains { $0.t >= 63 && $0.t < 72 && $0.state == "connected" }, "p\(i + 1): \(text(i))")
            }
            // p4 goes at 69 (link lost at 74), is back at 75 and meets a controller that cannot make links until 80:
            // 0x3E, backoff, then a link.
            #expect(history(3).contains { $0.reason.contains("0x3E") }, "p4: \(text(3))")
            #expect(history(3).contains { $0.t >= 80 && $0.state == "connected" }, "p4: \(text(3))")
            // p5's GATT server goes silent at 84: its next periodic read gets no answer, the ATT timeout (4 s here)
            // drops the link, and it is made again (the server answers once more at 92).
            #expect(
                history(4).contains { $0.t >= 84 && $0.reason.contains("dropped by the gateway") }, "p5: \(text(4))")
            #expect(history(4).contains { $0.t >= 88 && $0.state == "connected" }, "p5: \(text(4))")
            #expect(history(4).last?.state == "connected", "p5: \(text(4))")
            // The name-prefix intent took p5 and read its manufacturer name on each link.
            #expect(!published(Self.addresses[4], via: "read").isEmpty)
            #expect(!observer.states("\(base)/\(Self.addresses[4])/gatt").isEmpty)

            // The end: every state topic true — the retained state says connected, as the simulator's links say.
            let late = try Observer(port: f.broker.port, filter: "\(base)/+/state")
            defer { late.stop() }
            try await EndToEndSuites.waitFor("retained states") {
                Self.addresses.allSatisfy { !late.states("\(base)/\($0)/state").isEmpty }
            }
            let linked = Set(simulator.nodes[0].links.map(\.peer.topicComponent))
            for a in Self.addresses {
                #expect(late.states("\(base)/\(a)/state").last?["state"] as? String == "connected", "\(a)")
                #expect(linked.contains(a), "\(a) linked in the simulator")
            }
            // A write through the command topic, allowed for p1's Alert Level, refused for p2.
            for (address, id) in [(Self.addresses[0], "w1"), (Self.addresses[1], "w2")] {
                try await observer.client.publish(
                    MQTTMessage(
                        topic: "\(base)/\(address)/write",
                        payload: Array(#"{"characteristic":"2A06","value":"01","id":"\#(id)"}"#.utf8),
                        qos: .atLeastOnce, retain: false))
            }
            try await EndToEndSuites.waitFor("write results") {
                observer.states("\(base)/\(Self.addresses[1])/write/result").count == 1
                    && observer.states("\(base)/\(Self.addresses[0])/write/result").count == 1
            }
            #expect(
                observer.states("\(base)/\(Self.addresses[0])/write/result").first?["result"] as? String == "success")
            let refused = observer.states("\(base)/\(Self.addresses[1])/write/result").first
            #expect(refused?["result"] as? String == "error")
            #expect((refused?["error"] as? String)?.contains("not allowed") == true)
            let written =
                simulator.nodes[0].links.first { $0.peer.topicComponent == Self.addresses[0] }?.gatt.writes ?? []
            #expect(written.contains { $0.value == [0x01] }, "the peripheral saw the write: \(written)")

            // Every payload on the peripheral topics matches its schema (schema/v1/peripheral-*.json).
            // (The write commands on `…/write` are the operator's, not the gateway's.)
            let published = observer.lock.withLock { observer.messages.filter { !$0.topic.hasSuffix("/write") } }
            let problems = try SchemaValidation.problems(published, prefix: f.prefix, directory: f.directory)
            #expect(problems == nil, "schema validation: \(problems ?? "")")
            let rssi = observer.lock.withLock { observer.messages.filter { $0.topic.hasSuffix("/rssi") }.count }
            #expect(rssi > 10, "connection RSSI every 2 s per link")
        }
    }
}
