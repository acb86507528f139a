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
    /// the broker's, not the gateway's.
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
            try await Task.sleep(for: .milliseconds(500))

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
    }
}
