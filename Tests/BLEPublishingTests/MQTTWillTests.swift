import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs mosquitto"), .timeLimit(.minutes(1)))
struct MQTTWillTests {
    private func configuration(_ broker: Mosquitto, port: Int? = nil) -> MQTTConfiguration {
        var configuration = testConfiguration(broker)
        if let port { configuration.port = port }
        configuration.will = .init(
            topic: "will/gateway", payload: Array("offline".utf8), qos: .atLeastOnce,
            retain: false)
        return configuration
    }

    /// Cancelling `run()` sends DISCONNECT, so the broker discards the will: an observer sees the marker published
    /// after the broker logged the disconnect, and nothing before it.
    @Test func aGracefulStopDoesNotPublishTheWill() async throws {
        let broker = try startBroker()
        let gateway = configuration(broker)
        try await withRunningClient(testConfiguration(broker)) { observer, events in
            await events.waitFor { $0.isConnected }
            let stream = try observer.subscribe("will/#")
            _ = try await withRunningClient(gateway) { _, gatewayEvents in
                await gatewayEvents.waitFor { $0.isConnected }
            }
            // Bounded wait for the broker to have handled the gateway's DISCONNECT.
            for _ in 0..<2000 {
                let log = (try? String(contentsOfFile: broker.logPath, encoding: .utf8)) ?? ""
                if log.contains("Client \(gateway.clientID) disconnected") { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            try await observer.publish(MQTTMessage(topic: "will/marker", payload: [], qos: .atLeastOnce))
            #expect(await collect(stream, count: 1).map(\.topic) == ["will/marker"])
        }
    }

    /// The gateway's connection dies without DISCONNECT — here the TCP relay it talks through is SIGKILLed, which
    /// to the broker looks exactly like the gateway process being killed — and the broker publishes the will.
    /// (kill -9 of the real gateway binary is tested end to end by the gateway's own tests.)
    @Test(
        .enabled(if: TestDependency.runs(FileManager.default.isExecutableFile(atPath: "/usr/bin/socat")), "needs socat")
    )
    func anAbruptConnectionLossPublishesTheWill() async throws {
        let broker = try startBroker()
        let relayPort = try Loopback.freePort()
        let relay = Process()
        relay.executableURL = URL(fileURLWithPath: "/usr/bin/socat")
        relay.arguments = ["TCP-LISTEN:\(relayPort),bind=127.0.0.1,reuseaddr", "TCP:127.0.0.1:\(broker.port)"]
        try relay.run()
        defer {
            if relay.isRunning {
                kill(relay.processIdentifier, SIGKILL)
                relay.waitUntilExit()
            }
        }
        try await withRunningClient(testConfiguration(broker)) { observer, events in
            await events.waitFor { $0.isConnected }
            let stream = try observer.subscribe("will/#")
            // The gateway retries (50 ms backoff) until socat listens; socat relays exactly one connection.
            try await withRunningClient(configuration(broker, port: relayPort)) { _, gatewayEvents in
                await gatewayEvents.waitFor { $0.isConnected }
                kill(relay.processIdentifier, SIGKILL)
                let will = await collect(stream, count: 1)
                #expect(will.map(\.topic) == ["will/gateway"])
                #expect(will.first?.payload == Array("offline".utf8))
            }
        }
    }
}
