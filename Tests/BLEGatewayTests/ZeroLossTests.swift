import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

extension EndToEndSuites {
    /// The gateway's promise, end to end: a real broker, the simulator's office, and the gateway as a real process.
    /// Every reading that became durable reaches the subscriber however the broker and the gateway are treated;
    /// QoS 1 duplicates are allowed, gaps in `seq` are not.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(8)), .serialized)
    struct ZeroLossTests {
        struct Received: Sendable {
            var seq: Int
            var topic: String
            var payload: String
        }

        /// Collects every message under the prefix through a persistent session (so a broker restart loses nothing
        /// queued for it).
        final class Subscriber: @unchecked Sendable {
            let client: MQTTClient
            private let lock = NSLock()
            private var received: [Received] = []
            private var wills = 0
            private var task: Task<Void, Never>?
            private var runner: Task<Void, Error>?

            convenience init(port: Int, prefix: String, protocolVersion: MQTTProtocolVersion = .v5) throws {
                try self.init(ports: [port], prefix: prefix, protocolVersion: protocolVersion)
            }

            /// Through the first of `ports` on loopback, failing over to the others (a cluster's nodes). At QoS 0
            /// the session is clean: a witness of what the broker passed on while it was connected, nothing more.
            init(
                ports: [Int], prefix: String, protocolVersion: MQTTProtocolVersion = .v5, qos: MQTTQoS = .atLeastOnce,
                clientID: String = "zero-loss-observer"
            ) throws {
                var c = MQTTConfiguration()
                c.brokers = ports.map { .init(host: "127.0.0.1", port: $0) }
                c.protocolVersion = protocolVersion
                c.clientID = clientID
                c.session = qos == .atMostOnce ? .clean : .persistent(expiry: .seconds(3600))
                c.reconnect = .init(minDelay: .milliseconds(50), maxDelay: .milliseconds(300), jitter: 0)
                client = MQTTClient(configuration: c)
                let stream = try client.subscribe("\(prefix)/#", qos: qos)
                runner = Task { try await client.run() }
                task = Task {
                    for await m in stream {
                        let text = String(decoding: m.payload, as: UTF8.self)
                        let json = try? JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any]
                        self.lock.withLock {
                            if let seq = json?["seq"] as? Int {
                                self.received.append(Received(seq: seq, topic: m.topic, payload: text))
                            } else if json?["state"] as? String == "offline" {
                                self.wills += 1
                            }
                        }
                    }
                }
            }

            var messages: [Received] { lock.withLock { received } }
            var willCount: Int { lock.withLock { wills } }

            func stop() {
                runner?.cancel()
                task?.cancel()
            }
        }

        @Test func noDurableReadingIsLostAcrossBrokerRestartsAnOutageAndGatewayKills() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "zeroloss-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let broker = try Mosquitto(directory: root, persistence: true)
            try broker.start()
            let bin = BuiltProducts.blegateway
            let (sim, socket) = try await Self.startOffice(in: root)
            defer { sim.stop() }
            let subscriber = try Subscriber(port: broker.port, prefix: "zl")
            defer { subscriber.stop() }
            await subscriber.client.subscribed("zl/#")  // its SUBACK: the session exists before the gateway publishes

            let gatewayLog = root.appendingPathComponent("gateway.log").path
            // The backoff is capped at 1 s so the gateway is back within the test's settle time after the outage
            // (the default cap, 60 s, is for fleets: it would make this test wait up to a minute for no reason).
            let config = root.appendingPathComponent("gateway.yaml")
            try "mqtt:\n  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n".write(
                to: config, atomically: true, encoding: .utf8)
            func startGateway() throws -> Child {
                try Child(
                    bin,
                    [
                        "run", "--gateway-id", "gw-lobby", "--device", "unix:\(socket)", "--broker", broker.url,
                        "--prefix", "zl", "--spool", root.appendingPathComponent("spool.sqlite").path,
                        "--config", config.path,
                    ],
                    log: gatewayLog)
            }
            var gateway = try startGateway()
            var rng = SystemRandomNumberGenerator()
            try await Task.sleep(for: .seconds(2))

            // 20 SIGKILLs at random moments; each restart finds its spool and goes on from there.
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...1500, using: &rng)))
                gateway.stop(SIGKILL)
                gateway = try startGateway()
            }
            // 10 broker restarts.
            for _ in 0..<10 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...1200, using: &rng)))
                broker.terminate()
                try broker.start()
            }
            // A minute without a broker: the spool holds everything.
            try await Task.sleep(for: .seconds(1))
            broker.terminate()
            try await Task.sleep(for: .seconds(60))
            try broker.start()
            try await Task.sleep(for: .seconds(5))

            #expect(gateway.stop(SIGTERM, limit: .seconds(20)), "the gateway stops on SIGTERM")
            try await Task.sleep(for: .seconds(2))
            let got = subscriber.messages
            let complete = Self.expectEverySeq(got, subscriber: subscriber, status: "zl/gw-lobby/status", atLeast: 1000)
            // Every state event of the run: adapter states, online and offline statuses, all present in the sequence.
            let states = got.filter { $0.topic.hasSuffix("/adapter") || $0.topic.hasSuffix("/status") }
            #expect(states.count >= 2 * 21, "each of the 21 gateway runs recorded its status and adapter state")

            // What was published matches the published schemas.
            let published = got.map { (topic: $0.topic, payload: $0.payload) }
            let problems = try SchemaValidation.problems(
                published, prefix: "zl", directory: root, name: "messages.jsonl")
            #expect(problems == nil, "schema validation: \(problems ?? "")")
            if complete && problems == nil { try? FileManager.default.removeItem(at: root) }
        }

        /// The simulator's office at real speed in `root`/sim, its log in `root`; returns once the lobby gateway's
        /// controller socket is there.
        static func startOffice(in root: URL, scenario: String? = nil) async throws -> (
            child: Child, lobbySocket: String
        ) {
            let simDir = root.appendingPathComponent("sim")
            try FileManager.default.createDirectory(at: simDir, withIntermediateDirectories: true)
            let scenario =
                scenario ?? BuiltProducts.repositoryRoot.appendingPathComponent("config/scenarios/office.yaml").path
            let sim = try Child(
                BuiltProducts.blegateway,
                [
                    "sim", "--scenario", scenario, "--socket-dir", simDir.path,
                    "--speed", "1", "--status-every", "0",
                ],
                log: root.appendingPathComponent("sim.log").path)
            let socket = simDir.appendingPathComponent("gw-lobby.sock").path
            try await EndToEndSuites.waitFor("the simulator's socket") {
                FileManager.default.fileExists(atPath: socket)
            }
            return (sim, socket)
        }

        /// The drill's verdict once the gateway was stopped gracefully (which drains the spool and publishes the final
        /// offline status, the highest seq): more than `atLeast` readings, no seq missing, the offline status last, a
        /// last will delivered, and a seq delivered twice (QoS 1) always the same reading. Returns whether no seq was
        /// missing.
        /// - Parameter will: whether the run must have delivered the gateway's last will (it killed the gateway).
        static func expectEverySeq(
            _ got: [Received], subscriber: Subscriber, status: String, atLeast: Int, will: Bool = true
        ) -> Bool {
            let seqs = Set(got.map(\.seq))
            let top = seqs.max() ?? 0
            let missing = (1...max(top, 1)).filter { !seqs.contains($0) }
            #expect(top > atLeast, "the run produced a substantial stream (\(top) readings)")
            #expect(missing.isEmpty, "seq gaps: \(missing.prefix(20)) (\(missing.count) missing of \(top))")
            let last = got.filter { $0.seq == top }.first
            #expect(
                last?.topic == status && last?.payload.contains("\"offline\"") == true,
                "the last reading is the retained offline status")
            if will { #expect(subscriber.willCount >= 1, "a SIGKILLed gateway's last will reached the subscriber") }
            let differing = Dictionary(grouping: got, by: \.seq).filter { Set($0.value.map(\.payload)).count > 1 }
            #expect(
                differing.isEmpty, "a seq delivered twice is the same reading: \(differing.keys.sorted().prefix(10))")
            return missing.isEmpty
        }
    }
}
