import BLEDomain
import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEGateway

extension EndToEndSuites {
    /// Home Assistant discovery through the whole gateway against a real mosquitto (the runtime in this process over a
    /// scripted source): documents retained without the envelope, again on Home Assistant's birth message, emptied
    /// when remote configuration turns discovery off. Home Assistant itself: Tests/homeassistant (make
    /// test-homeassistant).
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(1)), .serialized)
    struct HomeAssistantEndToEndTests {
        /// Every message on a filter, payloads as they came (an empty one too), with the retain flag.
        final class Listener: @unchecked Sendable {
            let client: MQTTClient
            let lock = NSLock()
            var messages: [MQTTMessage] = []
            var runner: Task<Void, Error>?
            var task: Task<Void, Never>?

            init(port: Int, filter: String) throws {
                var c = MQTTConfiguration()
                c.host = "127.0.0.1"
                c.port = port
                c.clientID = "ha-listener-\(UUID().uuidString.prefix(8))"
                c.reconnect = .init(minDelay: .milliseconds(50), maxDelay: .milliseconds(300), jitter: 0)
                client = MQTTClient(configuration: c)
                let stream = try client.subscribe(filter, qos: .atLeastOnce)
                runner = Task { try await client.run() }
                task = Task { for await m in stream { self.lock.withLock { self.messages.append(m) } } }
            }

            func on(_ topic: String) -> [MQTTMessage] { lock.withLock { messages.filter { $0.topic == topic } } }
            func stop() {
                runner?.cancel()
                task?.cancel()
            }
        }

        @Test func discoveryIsRetainedWithoutTheEnvelopeAgainOnTheBirthMessageAndEmptiedWhenTurnedOff() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let prefix = "\(f.prefix)-ha"
            let topic = "\(prefix)/device/\(f.gateway)/blegateway_\(f.gateway)/config"
            var c = f.configuration()
            c.homeAssistant.enabled = true
            c.homeAssistant.discoveryPrefix = prefix
            let (_, _, task) = try f.start(c)

            let listener = try Listener(port: f.broker.port, filter: "\(prefix)/#")
            // Everything under the gateway's own prefix, as the fleet's seq stream reads it.
            let stream = try Listener(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer {
                listener.stop()
                stream.stop()
                task.cancel()
            }
            try await EndToEndSuites.waitFor("the gateway's document") { !listener.on(topic).isEmpty }
            let document = listener.on(topic)[0].payload
            // Home Assistant's format alone: its device-discovery schema refuses unknown keys such as `run` or `seq`.
            let json = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
            #expect(Set(json.keys) == ["dev", "o", "cmps", "qos"], "\(json.keys)")

            // Retained: a subscriber that comes later (Home Assistant starting after the gateway) still gets it.
            let late = try Listener(port: f.broker.port, filter: topic)
            defer { late.stop() }
            try await EndToEndSuites.waitFor("the retained document") { !late.on(topic).isEmpty }
            #expect(late.on(topic)[0].retain && late.on(topic)[0].payload == document)

            // Home Assistant's birth message: the document again.
            try await listener.client.publish(
                MQTTMessage(
                    topic: "\(prefix)/status", payload: Array("online".utf8),
                    qos: .atLeastOnce, retain: false))
            try await EndToEndSuites.waitFor("the document again") { listener.on(topic).count >= 2 }
            #expect(listener.on(topic)[1].payload == document)

            // A remote document turns discovery off: the document is emptied, which removes the device.
            try await listener.client.publish(
                MQTTMessage(
                    topic: f.configTopic, payload: Array(#"{"homeassistant": {"enabled": false}}"#.utf8),
                    qos: .atLeastOnce, retain: true))
            try await EndToEndSuites.waitFor("the empty document") {
                listener.on(topic).last?.payload.isEmpty == true
            }
            task.cancel()
            _ = try? await task.value
            // The documents are published outside the prefix and take no seq: the stream under the prefix has no hole
            // where one went (the fleet's gap counter, /metrics and watch count such holes as readings lost).
            let live = stream.lock.withLock { stream.messages.filter { !$0.retain } }
            let seqs = live.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any])?["seq"] as? Int
            }
            #expect(seqs.count >= 3, "\(live.map(\.topic))")
            #expect(EndToEndSuites.gaps(seqs) == [], "seqs under the prefix: \(seqs)")
        }
    }
}
