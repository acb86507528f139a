import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto"), .timeLimit(.minutes(1)))
struct MQTTSubscribeTests {
    @Test(arguments: [MQTTProtocolVersion.v5, .v311])
    func subscribeRoundTripDeliversTopicPayloadAndQoS(version: MQTTProtocolVersion) async throws {
        let broker = try startBroker()
        try await withRunningClient(testConfiguration(broker, protocolVersion: version)) { client, events in
            await events.waitFor { $0.isConnected }
            let stream = try client.subscribe("gw/+/reading", qos: .atLeastOnce)
            try await client.publish(
                MQTTMessage(topic: "gw/7/reading", payload: [0x00, 0xFF, 0x10], qos: .atLeastOnce))
            try await client.publish(MQTTMessage(topic: "gw/7/other", payload: [9], qos: .atLeastOnce))
            try await client.publish(MQTTMessage(topic: "gw/8/reading", payload: [0x42], qos: .exactlyOnce))
            let messages = await collect(stream, count: 2)
            #expect(messages.map(\.topic) == ["gw/7/reading", "gw/8/reading"])
            #expect(messages.map(\.payload) == [[0x00, 0xFF, 0x10], [0x42]])
            // The delivered QoS is the lower of the publish's and the subscription's (MQTT 5 §3.8.4).
            #expect(messages.map(\.qos) == [.atLeastOnce, .atLeastOnce])
            #expect(messages.allSatisfy { !$0.retain })
        }
    }

    @Test func aRetainedMessageReachesALaterSubscriberFlaggedRetained() async throws {
        let broker = try startBroker()
        let configuration = testConfiguration(broker)
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            try await client.publish(
                MQTTMessage(
                    topic: "gw/status", payload: Array("online".utf8), qos: .atLeastOnce,
                    retain: true))
        }
        try await withRunningClient(testConfiguration(broker)) { client, events in
            await events.waitFor { $0.isConnected }
            let messages = await collect(try client.subscribe("gw/status"), count: 1)
            #expect(messages.first?.payload == Array("online".utf8))
            #expect(messages.first?.retain == true)
        }
    }

    @Test func theMQTT5MessageExpiryIntervalIsDeliveredToTheSubscriber() async throws {
        let broker = try startBroker()
        try await withRunningClient(testConfiguration(broker)) { client, events in
            await events.waitFor { $0.isConnected }
            let stream = try client.subscribe("exp/#")
            try await client.publish(
                MQTTMessage(
                    topic: "exp/a", payload: [1], qos: .atLeastOnce,
                    messageExpiryInterval: 3600))
            try await client.publish(MQTTMessage(topic: "exp/b", payload: [2], qos: .atLeastOnce))
            let messages = await collect(stream, count: 2)
            // The broker forwards the remaining lifetime (§3.3.2.3.3): at most what was sent, and not expired.
            let expiry = try #require(messages.first?.messageExpiryInterval)
            #expect(expiry > 3500 && expiry <= 3600)
            #expect(messages.last?.messageExpiryInterval == nil)
        }
    }

    @Test func oneStreamForSeveralFiltersHasTheirRetainedMessagesBeforeAMessageSentAfterSubscribing() async throws {
        let broker = try startBroker()
        try await withRunningClient(testConfiguration(broker)) { client, events in
            await events.waitFor { $0.isConnected }
            for (topic, payload) in [("cfg/fleet", "f"), ("cfg/gw", "g")] {
                try await client.publish(
                    MQTTMessage(topic: topic, payload: Array(payload.utf8), qos: .atLeastOnce, retain: true))
            }
        }
        try await withRunningClient(testConfiguration(broker)) { client, events in
            // With the CONNACK or at once if connected: either way the SUBSCRIBEs go out before the PUBLISH below.
            let stream = try client.subscribe(["cfg/fleet", "cfg/gw", "cfg/sync", "live/+"])
            await events.waitFor { $0.isConnected }
            try await client.publish(MQTTMessage(topic: "cfg/sync", payload: [1], qos: .atLeastOnce))
            try await client.publish(MQTTMessage(topic: "live/x", payload: [2], qos: .atLeastOnce))
            try await client.publish(MQTTMessage(topic: "cfg/sync", payload: [3], qos: .atLeastOnce))
            let messages = await collect(stream, count: 5)
            // The retained documents before the message sent after subscribing, then the rest in order.
            #expect(Set(messages.prefix(2).map(\.topic)) == ["cfg/fleet", "cfg/gw"])
            #expect(messages.prefix(2).allSatisfy { $0.retain })
            #expect(messages.dropFirst(2).map(\.topic) == ["cfg/sync", "live/x", "cfg/sync"])
            #expect(client.droppedDeliveries == 0)
        }
    }

    @Test func anInvalidFilterIsRefusedWithTheLibraryError() throws {
        let client = MQTTClient(configuration: MQTTConfiguration())
        #expect(throws: MQTTError.self) { try client.subscribe("a/#/b") }
        #expect(throws: MQTTError.self) { try client.subscribe(["a/b", "a/#/b"]) }
    }
}
