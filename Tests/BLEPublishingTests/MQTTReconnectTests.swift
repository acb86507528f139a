import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto"), .timeLimit(.minutes(1)))
struct MQTTReconnectTests {
    /// The broker dies with publishes in flight: each publish resolves (acknowledged before the crash) or fails
    /// with `.notAcknowledged`/`.notConnected` — none hangs. The client reconnects to the restarted broker by
    /// itself, subscribes again, and publishing works again.
    @Test func aBrokerRestartMidStreamFailsUnacknowledgedPublishesAndTheClientReconnects() async throws {
        let broker = try startBroker()
        var configuration = testConfiguration(broker)
        configuration.maxInFlight = 1000
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            let stream = try client.subscribe("restart/#")
            let total = 400
            let outcomes = try await withThrowingTaskGroup(of: Result<MQTTPublishID, MQTTError>.self) { group in
                for i in 0..<total {
                    group.addTask {
                        do {
                            return .success(
                                try await client.publish(
                                    MQTTMessage(
                                        topic: "restart/\(i)", payload: Array(repeating: 0x55, count: 150),
                                        qos: .exactlyOnce)))
                        } catch let error as MQTTError {
                            return .failure(error)
                        }
                    }
                    if i == total / 4 { broker.kill() }
                }
                return try await group.reduce(into: [Result<MQTTPublishID, MQTTError>]()) { $0.append($1) }
            }
            #expect(outcomes.count == total, "every publish resolved or failed; none hangs")
            let failures = outcomes.compactMap { if case .failure(let e) = $0 { e } else { nil } }
            #expect(!failures.isEmpty, "publishes after the crash cannot have been acknowledged")
            #expect(failures.allSatisfy { $0.kind == .notAcknowledged || $0.kind == .notConnected }, "\(Set(failures))")

            try broker.start()  // same port
            await events.waitFor(2) { $0.isConnected }
            #expect(await events.count { if case .disconnected(let e) = $0 { e != nil } else { false } } == 1)
            try await client.publish(MQTTMessage(topic: "restart/after", payload: [1], qos: .atLeastOnce))
            // The subscription was sent again after the reconnect (the restarted broker kept no session).
            let received = await collect(stream.filter { $0.topic == "restart/after" }.eraseToStream(), count: 1)
            #expect(received.count == 1)
        }
    }
}

/// libmosquitto reports a refused TCP connection as MOSQ_ERR_ERRNO, "see errno"; read later, errno said "Success" (and
/// later "No such file or directory"). The operator must read what the system said.
@Suite(.timeLimit(.minutes(1)))
struct MQTTConnectErrnoTests {
    @Test func aBrokerThatIsNotListeningIsReportedAsConnectionRefusedEveryTime() async throws {
        var configuration = MQTTConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = try Loopback.freePort()
        configuration.clientID = "errno-\(UUID().uuidString.prefix(6))"
        configuration.reconnect = .init(minDelay: .milliseconds(20), maxDelay: .milliseconds(50), jitter: 0)
        try await withRunningClient(configuration) { _, events in
            let failures = await events.waitFor(3) { $0.failure != nil }.compactMap(\.failure)
            for f in failures {
                #expect(f.name == "MOSQ_ERR_ERRNO (connection refused)", "\(f)")
            }
        }
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    func eraseToStream() -> AsyncStream<Element> {
        let sequence = self
        return AsyncStream { continuation in
            let task = Task {
                do { for try await element in sequence { continuation.yield(element) } } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto"), .timeLimit(.minutes(1)))
struct MQTTSessionTests {
    /// A persistent session (Clean Start 0, Session Expiry Interval) survives a graceful stop: the next connection
    /// with the same client id is told Session Present, and QoS 1 messages published meanwhile are delivered.
    @Test(arguments: [MQTTProtocolVersion.v5, .v311])
    func aPersistentSessionIsResumedWithItsQueuedMessages(version: MQTTProtocolVersion) async throws {
        let broker = try startBroker()
        var configuration = testConfiguration(broker, protocolVersion: version)
        configuration.session = .persistent(expiry: .seconds(600))
        let firstStream = try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            // Kept alive past the stop: dropping a stream unsubscribes, which would empty the session.
            let stream = try client.subscribe("session/#", qos: .atLeastOnce)
            try await client.publish(MQTTMessage(topic: "session/ping", payload: [0], qos: .atLeastOnce))
            // The round trip proves the SUBSCRIBE was handled before we leave.
            #expect(await collect(stream, count: 1).map(\.topic) == ["session/ping"])
            #expect(await events.count { $0 == .connected(sessionPresent: false) } == 1)
            return stream
        }
        try await withRunningClient(testConfiguration(broker)) { other, events in
            await events.waitFor { $0.isConnected }
            try await other.publish(MQTTMessage(topic: "session/queued", payload: [42], qos: .atLeastOnce))
        }
        try await withRunningClient(configuration) { client, events in
            let stream = try client.subscribe("session/queued", qos: .atLeastOnce)
            await events.waitFor { $0 == .connected(sessionPresent: true) }
            #expect(await collect(stream, count: 1).map(\.payload) == [[42]])
        }
        withExtendedLifetime(firstStream) {}
    }
}

/// Failover along `brokers` against real listeners: a node that takes the connection and never answers CONNECT is
/// left at the connect deadline for the next, and a reconnection to the same broker is not a failover.
@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto"), .timeLimit(.minutes(1)))
struct MQTTFailoverTests {
    @Test func aNodeThatNeverAnswersConnectIsLeftAtTheDeadlineForTheNext() async throws {
        let (silent, silentPort) = try Loopback.silentListener()
        defer { close(silent) }
        let broker = try startBroker()
        var configuration = testConfiguration(broker)
        configuration.brokers = [
            .init(host: "127.0.0.1", port: silentPort), .init(host: "127.0.0.1", port: broker.port),
        ]
        configuration.connectTimeout = .seconds(1)
        let target = configuration.brokers[1]
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            let failure = await events.events.compactMap(\.failure).first
            #expect(
                failure?.description.contains("no CONNACK within 1.0 seconds") == true, "\(String(describing: failure))"
            )
            #expect(client.broker == target)
            #expect(client.failovers == 0, "the first accepted connection is no failover")

            // The broker restarts: the next attempt goes to the silent node, the one after it back to the broker.
            broker.kill()
            await events.waitFor { if case .disconnected = $0 { true } else { false } }
            try broker.start()
            await events.waitFor(2) { $0.isConnected }
            let dialled = await events.events.compactMap { if case .connecting(_, let b) = $0 { b.port } else { nil } }
            #expect(dialled.prefix(3) == [silentPort, broker.port, silentPort], "\(dialled)")
            #expect(client.failovers == 0, "back on the same broker: a reconnection, not a failover")
        }
    }
}
