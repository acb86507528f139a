import BLEPublishing
import BLETestSupport
import Foundation
import Testing

extension EndToEndSuites {
    /// State restoration as iOS's table asks it, with real processes: `blegateway sim` and `blegateway run` against a
    /// real mosquitto. A gateway killed with SIGKILL (quit by the system, a crash, a reboot: nothing but the
    /// configuration, the spool and the broker's retained messages survive) and one stopped with SIGTERM (quit by the
    /// user) both come back to every intent and subscription without an operator, and no retained state stays stale.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct PeripheralRestorationTests {
        static let scenario = """
            name: restoration
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-r, position: [0, 0, 2]}]
            peripherals:
              - {name: a, local_name: "Sensor A", service_uuids: ["181A"], address: "00:1B:DC:40:00:01", position: [2, 0, 1], interval_ms: 100, notify_interval_ms: 250}
              - {name: b, local_name: "Thermo B", service_uuids: ["181A"], address: "00:1B:DC:40:00:02", position: [0, 2, 1], interval_ms: 100, notify_interval_ms: 250}
            """

        static func config(prefixIntent: Bool) -> String {
            """
            mqtt: {reconnect_min_s: 0.2, reconnect_max_s: 1}
            remote_config: {enabled: false}
            scan: {active: true}
            peripherals:
              - {address: "00:1B:DC:40:00:01", name: a, subscribe: [{service: "181A", characteristic: "2A6E"}]}
            """ + (prefixIntent ? "\n  - {name_prefix: \"Thermo\", subscribe: [{characteristic: \"2A6E\"}]}\n" : "\n")
        }

        @Test func killedOrStoppedTheGatewayRestoresEveryLinkAndCorrectsEveryRetainedState() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "restore-\(UUID().uuidString.prefix(8))")
            let simDir = root.appendingPathComponent("sim")
            try FileManager.default.createDirectory(at: simDir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: root) }
            let broker = try Mosquitto(directory: root, persistence: true)
            try broker.start()
            defer { broker.terminate() }
            let bin = BuiltProducts.blegateway
            let scenario = root.appendingPathComponent("scenario.yaml")
            try Self.scenario.write(to: scenario, atomically: true, encoding: .utf8)
            let sim = try Child(
                bin,
                [
                    "sim", "--scenario", scenario.path, "--socket-dir", simDir.path, "--speed", "1",
                    "--status-every", "0",
                ], log: root.appendingPathComponent("sim.log").path)
            defer { sim.stop() }
            let socket = simDir.appendingPathComponent("gw-r.sock").path
            try await waitUntil("the simulator's socket") { FileManager.default.fileExists(atPath: socket) }

            let prefix = "rs\(UInt32.random(in: 0...UInt32.max))"
            let base = "\(prefix)/gw-r/peripherals"
            let a = "\(base)/001bdc400001/state"
            let b = "\(base)/001bdc400002/state"
            func start(prefixIntent: Bool) throws -> Child {
                let config = root.appendingPathComponent("gateway-\(prefixIntent).yaml")
                try Self.config(prefixIntent: prefixIntent).write(to: config, atomically: true, encoding: .utf8)
                return try Child(
                    bin,
                    [
                        "run", "--gateway-id", "gw-r", "--device", "unix:\(socket)", "--broker", broker.url,
                        "--prefix", prefix, "--spool", root.appendingPathComponent("spool.sqlite").path,
                        "--config", config.path,
                    ],
                    log: root.appendingPathComponent("gateway.log").path)
            }
            /// What a newcomer reads: the retained state of each topic.
            func retained(_ topic: String) async throws -> [String: Any] {
                let o = try Observer(port: broker.port, filter: topic)
                defer { o.stop() }
                try await EndToEndSuites.waitFor("retained \(topic)") { !o.states(topic).isEmpty }
                return o.states(topic)[0]
            }
            func waitUntil(_ what: String, _ check: @escaping () async throws -> Bool) async throws {
                do {
                    try await BLETestSupport.waitUntil(what, limit: .seconds(30), every: .milliseconds(100), check)
                } catch let timedOut as WaitTimedOut {
                    let log =
                        (try? String(
                            contentsOfFile: root.appendingPathComponent("gateway.log").path, encoding: .utf8)) ?? ""
                    Issue.record("\(timedOut); gateway log tail: \(log.suffix(1500))")
                    throw timedOut
                }
            }
            let live = try Observer(port: broker.port, filter: "\(base)/+/state")
            defer { live.stop() }
            try await live.publish("\(prefix)/probe", Array("{}".utf8))

            // Run 1: both devices connected (b through the name-prefix intent).
            var gateway = try start(prefixIntent: true)
            try await waitUntil("run 1 connected") {
                live.states(a).last?["state"] as? String == "connected"
                    && live.states(b).last?["state"] as? String == "connected"
            }
            let run1 = try #require(live.states(a).last?["run"] as? String)

            // Killed (SIGKILL: quit by the system, a crash; a reboot loses the same): the broker still says connected.
            gateway.stop(SIGKILL)
            #expect(try await retained(a)["state"] as? String == "connected")
            #expect(try await retained(b)["run"] as? String == run1, "stale, as a kill leaves it")

            // Run 2, started by systemd without an operator; the name-prefix intent was removed meanwhile. a is
            // connected again by this run; b's stale `connected` is corrected, since this run does not know it.
            gateway = try start(prefixIntent: false)
            try await waitUntil("run 2 restored a and corrected b") {
                let sa = try await retained(a)
                let sb = try await retained(b)
                return sa["run"] as? String != run1 && sa["state"] as? String == "connected"
                    && sb["run"] as? String != run1 && sb["state"] as? String == "disconnected"
            }
            let corrected = try await retained(b)
            #expect((corrected["reason"] as? String)?.contains("restarted") == true, "\(corrected)")
            // On the way, run 2 first said `disconnected` for a (its announcement at start), then connected.
            let run2 = try #require(try await retained(a)["run"] as? String)
            let run2States = live.states(a).filter { $0["run"] as? String == run2 }.compactMap {
                $0["state"] as? String
            }
            #expect(run2States.first == "disconnected" && run2States.last == "connected", "\(run2States)")
            // Subscriptions came back too: values flow on the new link.
            let valuesAfter = try Observer(port: broker.port, filter: "\(base)/001bdc400001/char/+")
            defer { valuesAfter.stop() }
            try await EndToEndSuites.waitFor("values on run 2", limit: .seconds(10)) {
                valuesAfter.lock.withLock { valuesAfter.messages.contains { $0.json["run"] as? String == run2 } }
            }

            // Stopped (SIGTERM: quit by the user): the gateway ends its links itself and says so.
            #expect(gateway.stop(SIGTERM), "a graceful stop within 10 s")
            let stopped = try await retained(a)
            #expect(stopped["state"] as? String == "disconnected" && stopped["run"] as? String == run2, "\(stopped)")
            #expect(stopped["reason"] as? String == "the gateway stopped", "\(stopped)")

            // Started again: connected again.
            gateway = try start(prefixIntent: false)
            defer { gateway.stop(SIGKILL) }
            try await waitUntil("run 3 connected") {
                let s = try await retained(a)
                return s["run"] as? String != run2 && s["state"] as? String == "connected"
            }
        }
    }
}
