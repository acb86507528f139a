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
    /// the broker's, not the gateway's. The network leg is: the gateway reaches amqtt through a TCP relay that stalls
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
            let relayPort = try Loopback.freePort()
            let relay = try Child(
                "/usr/bin/socat",
                ["TCP-LISTEN:\(relayPort),bind=127.0.0.1,reuseaddr,fork", "TCP:127.0.0.1:\(port)"],
                log: root.appendingPathComponent("relay.log").path)
            defer { relay.stop(SIGKILL) }
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
                    "--broker", "mqtt://127.0.0.1:\(relayPort)", "--prefix", "zln",
                    "--spool", root.appendingPathComponent("spool.sqlite").path, "--config", config.path,
                ],
                log: root.appendingPathComponent("gateway.log").path)
            try await Task.sleep(for: .seconds(3))
            let before = Set(subscriber.messages.map(\.seq)).max() ?? 0
            // socat relays each connection in a child it forks: the stall stops those children as well as the
            // listener (stopping the listener alone leaves the connection flowing).
            func signalRelay(_ s: Int32) {
                let children =
                    (try? String(contentsOfFile: "/proc/\(relay.pid)/task/\(relay.pid)/children", encoding: .utf8))
                for pid in (children ?? "").split(separator: " ").compactMap({ Int32($0) }) { kill(pid, s) }
                kill(relay.pid, s)
            }
            signalRelay(SIGSTOP)
            try await Task.sleep(for: .seconds(15))
            signalRelay(SIGCONT)
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
    }
}
