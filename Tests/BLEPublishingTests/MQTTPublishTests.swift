import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@Suite(
    .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (apt-get install mosquitto)"),
    .timeLimit(.minutes(1)))
struct MQTTPublishTests {
    @Test(arguments: [MQTTQoS.atMostOnce, .atLeastOnce, .exactlyOnce])
    func publishResumesOnAcknowledgementAndTheMessageArrives(qos: MQTTQoS) async throws {
        let broker = try startBroker()
        try await withRunningClient(testConfiguration(broker)) { client, events in
            await events.waitFor { $0.isConnected }
            let received = try client.subscribe("ack/#", qos: .exactlyOnce)
            let count = 50
            // Many at once, so acknowledgements interleave; each publish must resolve for its own message.
            let ids = try await withThrowingTaskGroup(of: MQTTPublishID.self) { group in
                for i in 0..<count {
                    group.addTask {
                        try await client.publish(
                            MQTTMessage(
                                topic: "ack/\(qos.rawValue)", payload: Array("m\(i)".utf8),
                                qos: qos))
                    }
                }
                return try await group.reduce(into: [MQTTPublishID]()) { $0.append($1) }
            }
            #expect(ids.count == count)
            #expect(Set(ids).count == count, "in-flight publishes have distinct packet identifiers")
            let messages = await collect(received, count: count)
            #expect(messages.allSatisfy { $0.qos == qos })
            #expect(
                Set(messages.map { String(decoding: $0.payload, as: UTF8.self) }) == Set((0..<count).map { "m\($0)" }))
        }
    }

    @Test func publishWhileDisconnectedFailsAtOnceInsteadOfQueueing() async throws {
        var configuration = MQTTConfiguration()
        configuration.port = try Loopback.freePort()
        let client = MQTTClient(configuration: configuration)
        await #expect(throws: MQTTError.self) {
            try await client.publish(MQTTMessage(topic: "t", payload: [1]))
        }
        do {
            try await client.publish(MQTTMessage(topic: "t", payload: [1]))
        } catch let error as MQTTError {
            #expect(error.kind == .notConnected)
        }
    }

    @Test func publishesBeyondTheInFlightWindowAreRefusedAndTheWindowResolvesAfterAcks() async throws {
        let broker = try startBroker()
        var configuration = testConfiguration(broker)
        configuration.maxInFlight = 2
        configuration.keepAlive = .seconds(60)
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            broker.pause()  // the broker stops answering: nothing is acknowledged
            async let first = client.publish(MQTTMessage(topic: "w", payload: [1], qos: .atLeastOnce))
            async let second = client.publish(MQTTMessage(topic: "w", payload: [2], qos: .atLeastOnce))
            // Wait until both are in the window (bounded); a third is refused only then.
            try await waitUntil("both publishes in the window") { client.inFlightCount >= 2 }
            #expect(client.inFlightCount == 2)
            var third: MQTTError?
            do {
                try await client.publish(MQTTMessage(topic: "w", payload: [3], qos: .atMostOnce))
            } catch let error as MQTTError {
                third = error
            }
            #expect(third?.kind == .inFlightWindowFull)
            #expect(third?.code == 2)
            broker.resume()
            let ids = try await [first, second]
            #expect(Set(ids).count == 2)
        }
    }
}
