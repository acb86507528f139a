import BLEPublishing
import BLETestSupport
import Foundation
import Testing

extension EndToEndSuites {
    /// The zero-loss drill's gateway half against the second broker: the gateway, a real process fed by the
    /// simulator's office, SIGKILLed 20 times while it publishes to amqtt under MQTT 3.1.1; every reading that became
    /// durable reaches a subscriber that stays connected, QoS 1 duplicates allowed, no gap in `seq`. The broker half
    /// (restarts, an outage) is not run against amqtt: it loses the QoS 1 messages queued for a persistent session
    /// when it restarts, even with its session database (docs/DEPLOY.md, "Other brokers"), so a gap there would be
    /// the broker's, not the gateway's; the last test here shows that loss, against mosquitto as the control. The network leg is: the gateway reaches amqtt through a TCP relay that stalls
    /// (SIGSTOP) for longer than the keepalive allows, then resumes.
    @Suite(
        .enabled(if: TestDependency.runs(Amqtt.isAvailable), "needs amqtt (make amqtt-venv)"), .timeLimit(.minutes(4)),
        .serialized)
    struct SecondBrokerZeroLossTests {
        @Test func noDurableReadingIsLostAcrossGatewayKillsUnderAmqtt() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "zl-amqtt-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let (broker, port) = try await Amqtt.start(in: root)
            defer { broker.stop(SIGTERM, limit: .seconds(5)) }
            let bin = BuiltProducts.blegateway
            let (sim, socket) = try await ZeroLossTests.startOffice(in: root)
            defer { sim.stop() }
            let subscriber = try ZeroLossTests.Subscriber(port: port, prefix: "zla", protocolVersion: .v311)
            defer { subscriber.stop() }
            await subscriber.client.subscribed("zla/#")

            let config = root.appendingPathComponent("gateway.yaml")
            try "mqtt:\n  protocol: 3\n  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n"
                .write(to: config, atomically: true, encoding: .utf8)
            let gatewayLog = root.appendingPathComponent("gateway.log").path
            func startGateway() throws -> Child {
                try Child(
                    bin,
                    [
                        "run", "--gateway-id", "gw-lobby", "--device", "unix:\(socket)",
                        "--broker", "mqtt://127.0.0.1:\(port)", "--prefix", "zla",
                        "--spool", root.appendingPathComponent("spool.sqlite").path, "--config", config.path,
                    ],
                    log: gatewayLog)
            }
            var gateway = try startGateway()
            try await Task.sleep(for: .seconds(2))
            var rng = SystemRandomNumberGenerator()
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...1500, using: &rng)))
                gateway.stop(SIGKILL)
                gateway = try startGateway()
            }
            try await Task.sleep(for: .seconds(5))
            #expect(gateway.stop(SIGTERM, limit: .seconds(20)), "the gateway stops on SIGTERM")
            try await Task.sleep(for: .seconds(2))
            if ZeroLossTests.expectEverySeq(
                subscriber.messages, subscriber: subscriber, status: "zla/gw-lobby/status",
                atLeast: 100)
            {
                try? FileManager.default.removeItem(at: root)
            }
        }

        /// The network, not the gateway, fails: the relay the gateway talks through stops forwarding for 15 s (three
        /// keepalive periods, so amqtt drops the connection and sends the will, and the gateway stops waiting for its
        /// PINGRESP), then resumes and takes the gateway's new connections. Every durable reading still reaches the
        /// subscriber, which talks to amqtt directly and never lost it: the unacknowledged ones are sent again.
        @Test func noDurableReadingIsLostAcrossANetworkStallUnderAmqtt() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "zl-amqtt-net-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let (broker, port) = try await Amqtt.start(in: root)
            defer { broker.stop(SIGTERM, limit: .seconds(5)) }
            let relay = try Relay(to: port, log: root.appendingPathComponent("relay.log").path)
            defer { relay.stop() }
            let (sim, socket) = try await ZeroLossTests.startOffice(in: root)
            defer { sim.stop() }
            let subscriber = try ZeroLossTests.Subscriber(port: port, prefix: "zln", protocolVersion: .v311)
            defer { subscriber.stop() }
            await subscriber.client.subscribed("zln/#")

            let config = root.appendingPathComponent("gateway.yaml")
            try "mqtt:\n  protocol: 3\n  keepalive_s: 5\n  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n"
                .write(to: config, atomically: true, encoding: .utf8)
            let gateway = try Child(
                BuiltProducts.blegateway,
                [
                    "run", "--gateway-id", "gw-lobby", "--device", "unix:\(socket)",
                    "--broker", "mqtt://127.0.0.1:\(relay.port)", "--prefix", "zln",
                    "--spool", root.appendingPathComponent("spool.sqlite").path, "--config", config.path,
                ],
                log: root.appendingPathComponent("gateway.log").path)
            try await Task.sleep(for: .seconds(3))
            let before = Set(subscriber.messages.map(\.seq)).max() ?? 0
            relay.stall()
            try await Task.sleep(for: .seconds(15))
            relay.resume()
            // The stall cut the connection: the gateway's status says it reconnected, and, being in seq order,
            // comes after every reading the stall held back.
            try await EndToEndSuites.waitFor("the gateway's reconnected status", limit: .seconds(40)) {
                subscriber.messages.contains { $0.topic == "zln/gw-lobby/status" && $0.payload.contains("reconnected") }
            }
            #expect(gateway.stop(SIGTERM, limit: .seconds(20)), "the gateway stops on SIGTERM")
            try await EndToEndSuites.waitFor("the gateway's offline status", limit: .seconds(10)) {
                subscriber.messages.contains { $0.topic == "zln/gw-lobby/status" && $0.payload.contains("shutdown") }
            }
            // No last will to expect: amqtt did not drop the stalled connection at one and a half keepalives (its
            // log shows it still connected 15 s into the stall, taken over by the gateway's next connection).
            if ZeroLossTests.expectEverySeq(
                subscriber.messages, subscriber: subscriber, status: "zln/gw-lobby/status", atLeast: 100,
                will: false)
            {
                try? FileManager.default.removeItem(at: root)
            }
        }

        /// The broker half, as amqtt stands: with its session database, a persistent session's subscription survives
        /// amqtt's restart and a message published after it is delivered, but the QoS 1 messages queued for the
        /// session before it are gone (docs/DEPLOY.md, "Other brokers"). The same steps against mosquitto with
        /// `persistence true` deliver every one: the control, which shows the steps can pass. The loss is a known
        /// issue, so an amqtt that keeps the messages fails this test and is noticed.
        @Test func amqttLosesTheQoS1MessagesQueuedForAPersistentSessionWhenItRestarts() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "restart-queue-\(UUID().uuidString.prefix(8))")
            let mosquittoDir = root.appendingPathComponent("mosquitto")
            try FileManager.default.createDirectory(at: mosquittoDir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: root) }

            let mosquitto = try Mosquitto(directory: mosquittoDir, persistence: true)
            try mosquitto.start()
            let control = try await Self.queuedAcrossARestart(port: mosquitto.port) {
                _ = mosquitto.terminate()
                try mosquitto.start()
            }
            _ = mosquitto.terminate()
            #expect(control == .init(before: 3, after: 1), "mosquitto, the control: \(control)")

            let sessions = root.appendingPathComponent("amqtt-sessions.sqlite")
            var (broker, port) = try await Amqtt.start(in: root, sessions: sessions)
            let amqtt = try await Self.queuedAcrossARestart(port: port) {
                broker.stop(SIGTERM, limit: .seconds(10))
                (broker, port) = try await Amqtt.start(in: root, port: port, sessions: sessions)
            }
            broker.stop(SIGTERM, limit: .seconds(10))
            #expect(amqtt.after == 1, "the session did not survive amqtt's restart: \(amqtt)")
            withKnownIssue("amqtt 0.12.1 loses the QoS 1 messages queued for a persistent session when it restarts") {
                #expect(amqtt.before == 3, "queued before the restart, delivered after it: \(amqtt.before) of 3")
            }
        }

        struct Queued: Equatable {
            /// Of the three messages published while the subscriber was away, before the broker's restart.
            var before: Int
            /// Of the one published after the restart (the session's subscription survived).
            var after: Int
        }

        /// A persistent session subscribes to `restart/#` and goes away; three QoS 1 messages are published (each
        /// acknowledged by the broker); `restart` restarts the broker; one more is published; the subscriber comes
        /// back with the same client id and reads until the last one (or 15 s).
        static func queuedAcrossARestart(port: Int, restart: () async throws -> Void) async throws -> Queued {
            func configuration(_ id: String, persistent: Bool) -> MQTTConfiguration {
                var c = MQTTConfiguration()
                c.host = "127.0.0.1"
                c.port = port
                c.protocolVersion = .v311
                c.clientID = id
                if persistent { c.session = .persistent(expiry: .seconds(3600)) }
                c.reconnect = .init(minDelay: .milliseconds(100), maxDelay: .milliseconds(500), jitter: 0)
                return c
            }
            let subscriber = configuration("restart-subscriber-\(UUID().uuidString.prefix(6))", persistent: true)
            func publish(_ payloads: [String]) async throws {
                let client = MQTTClient(configuration: configuration("restart-publisher", persistent: false))
                let runner = Task { try await client.run() }
                defer { runner.cancel() }
                for p in payloads {
                    let deadline = ContinuousClock.now + .seconds(15)
                    while true {
                        do {
                            try await client.publish(
                                MQTTMessage(topic: "restart/q", payload: Array(p.utf8), qos: .atLeastOnce))
                            break
                        } catch let e as MQTTError where e.kind == .notConnected && ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
                runner.cancel()
                _ = try? await runner.value
            }

            // The session: subscribed, then away (a clean DISCONNECT; the broker keeps the session).
            let first = MQTTClient(configuration: subscriber)
            let firstStream = try first.subscribe("restart/#", qos: .atLeastOnce)
            let firstRunner = Task { try await first.run() }
            await first.subscribed("restart/#")
            firstRunner.cancel()
            _ = try? await firstRunner.value
            _ = firstStream

            try await publish(["before-1", "before-2", "before-3"])
            try await restart()
            try await publish(["after-1"])

            let again = MQTTClient(configuration: subscriber)
            let stream = try again.subscribe("restart/#", qos: .atLeastOnce)
            let runner = Task { try await again.run() }
            defer { runner.cancel() }
            let reader = Task {
                var seen: [String] = []
                for await m in stream {
                    seen.append(String(decoding: m.payload, as: UTF8.self))
                    if seen.last == "after-1" { break }
                }
                return seen
            }
            let timeout = Task {
                try await Task.sleep(for: .seconds(15))
                reader.cancel()
            }
            let seen = await reader.value
            timeout.cancel()
            return Queued(
                before: Set(seen.filter { $0.hasPrefix("before-") }).count,
                after: Set(seen.filter { $0.hasPrefix("after-") }).count)
        }
    }
}
