import BLEPublishing
import BLETestSupport
import Foundation
import Testing

/// What a real NATS cluster (three nodes of Debian's nats-server 2.9, JetStream on) keeps for MQTT clients when its
/// nodes die, and the client's failover between them. Each test states one property docs/DEPLOY.md relies on, so a
/// NATS that changes it fails here first.
@Suite(
    .enabled(if: TestDependency.runs(NatsCluster.isAvailable), "needs /usr/sbin/nats-server (make test installs it)"),
    .timeLimit(.minutes(3)), .serialized)
struct NatsClusterTests {
    static func configuration(_ cluster: NatsCluster, nodes: [Int], id: String = #function) -> MQTTConfiguration {
        var c = MQTTConfiguration()
        c.brokers = nodes.map { .init(host: "127.0.0.1", port: cluster.nodes[$0].mqttPort) }
        c.clientID = "nats-\(id.prefix(24))-\(UUID().uuidString.prefix(6))"
            .replacingOccurrences(of: "(", with: "").replacingOccurrences(of: ")", with: "")
        c.protocolVersion = .v311
        c.keepAlive = .seconds(5)
        c.reconnect = .init(minDelay: .milliseconds(100), maxDelay: .milliseconds(500), jitter: 0)
        return c
    }

    static func startCluster() throws -> NatsCluster {
        try TestDependency.require(NatsCluster.isAvailable, "/usr/sbin/nats-server")
        let cluster = try NatsCluster()
        try cluster.start()
        return cluster
    }

    /// Publishes until the broker acknowledges (the client may be between nodes), within `limit`.
    static func publishAcknowledged(_ client: MQTTClient, _ message: MQTTMessage, limit: Duration = .seconds(20))
        async throws
    {
        let deadline = ContinuousClock.now + limit
        while true {
            do {
                try await client.publish(message)
                return
            } catch let e as MQTTError
                where ContinuousClock.now < deadline && [.notAcknowledged, .notConnected].contains(e.kind)
            {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Home Assistant's discovery and the gateways' retained config rest on this: a retained message acknowledged by
    /// a node that then dies is kept by the cluster, and a wildcard subscription on another node finds it. Not at
    /// once: until the survivors have elected new leaders for the streams the dead node led, a new subscription may
    /// find nothing (seen by hand: nothing 3 s after the kill, there after 10 s), and a subscription finds retained
    /// messages only when it is made. So each try is a new subscription, within a bound.
    @Test func aRetainedMessageIsKeptWhenTheNodeThatTookItDiesAndAnotherNodeServesIt() async throws {
        let cluster = try Self.startCluster()
        try await withRunningClient(Self.configuration(cluster, nodes: [0])) { client, events in
            await events.waitFor { $0.isConnected }
            try await client.publish(
                MQTTMessage(topic: "nt/gw-1/config", payload: Array("v1".utf8), qos: .atLeastOnce, retain: true))
        }
        cluster.kill(cluster.nodes[0])
        var found: [MQTTMessage] = []
        let deadline = ContinuousClock.now + .seconds(40)
        while found.isEmpty && ContinuousClock.now < deadline {
            // Bounded as a whole: a node in the middle of an election may take the connection and never answer.
            found = try await withRunningClient(Self.configuration(cluster, nodes: [2], id: "finder")) { client, _ in
                let stream = try client.subscribe("nt/#")
                return await Self.first(of: stream, within: .seconds(3))
            }
        }
        #expect(found.map(\.topic) == ["nt/gw-1/config"] && found.first?.retain == true, "\(found)")
    }

    /// The messages `stream` yields within `limit` after the call, at most one.
    static func first(of stream: AsyncStream<MQTTMessage>, within limit: Duration) async -> [MQTTMessage] {
        await withTaskGroup(of: [MQTTMessage].self) { group in
            group.addTask {
                for await m in stream { return [m] }
                return []
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return []
            }
            let first = await group.next() ?? []
            group.cancelAll()
            return first
        }
    }

    /// A gateway's persistent session is kept by the cluster, not by its node: a subscriber whose node dies fails
    /// over to another, which says the session is present and delivers the QoS 1 messages published meanwhile
    /// (through a third node).
    @Test func aPersistentSessionWhoseNodeDiesResumesOnAnotherWithTheMessagesQueuedForIt() async throws {
        let cluster = try Self.startCluster()
        var session = Self.configuration(cluster, nodes: [0, 2])
        session.session = .persistent(expiry: .seconds(3600))
        try await withRunningClient(session) { subscriber, events in
            let stream = try subscriber.subscribe("ns/#")
            await subscriber.subscribed("ns/#")
            cluster.kill(cluster.nodes[0])
            try await withRunningClient(Self.configuration(cluster, nodes: [1])) { client, events in
                for i in 1...3 {
                    try await Self.publishAcknowledged(
                        client, MQTTMessage(topic: "ns/q", payload: [UInt8(i)], qos: .atLeastOnce))
                }
            }
            let connected = await events.waitFor(2) { $0.isConnected }
            #expect(connected.last == .connected(sessionPresent: true), "the session is the cluster's: \(connected)")
            #expect(subscriber.broker?.port == cluster.nodes[2].mqttPort)
            let got = await collect(stream, count: 3, limit: .seconds(30))
            #expect(got.map(\.payload) == [[1], [2], [3]])
        }
    }

    /// The client's side: its node dies, the next attempt goes to the next node of its list, which accepts it; the
    /// client says where it is and counts the failover. Publishing works again there, and a subscription on a third
    /// node sees every message the cluster acknowledged, before and after the death: an acknowledged QoS 1 message
    /// is not lost with the node that acknowledged it.
    @Test func aClientWhoseNodeDiesFailsOverToTheNextAndNoAcknowledgedMessageIsLost() async throws {
        let cluster = try Self.startCluster()
        let received = try await withRunningClient(Self.configuration(cluster, nodes: [2], id: "reader")) {
            reader, readerEvents in
            let stream = try reader.subscribe("nf/#")
            await reader.subscribed("nf/#")
            let publisher = Self.configuration(cluster, nodes: [0, 1, 2])
            let acknowledged = try await withRunningClient(publisher) { client, events in
                await events.waitFor { $0.isConnected }
                #expect(client.broker?.port == cluster.nodes[0].mqttPort, "in order: the first node first")
                var acknowledged: [Int] = []
                for i in 0..<200 {
                    if i == 100 { cluster.kill(cluster.nodes[0]) }
                    let message = MQTTMessage(topic: "nf/\(i)", payload: Array("\(i)".utf8), qos: .atLeastOnce)
                    do {
                        try await client.publish(message)
                        acknowledged.append(i)
                    } catch let e as MQTTError where e.kind == .notAcknowledged || e.kind == .notConnected {
                        // In flight when the node died, or between nodes: a gateway's spool sends it again.
                        try await Self.publishAcknowledged(client, message)
                        acknowledged.append(i)
                    }
                }
                // The survivors may close a connection while they elect new stream leaders, so the client can move
                // more than once; never back to the dead node while it is dead.
                let ended = await events.events.filter { if case .disconnected = $0 { true } else { false } }
                #expect(client.broker != nil && client.broker?.port != cluster.nodes[0].mqttPort, "on a survivor")
                #expect(client.failovers >= 1 && client.failovers <= ended.count, "\(ended)")
                return acknowledged
            }
            #expect(acknowledged.count == 200)
            var seen = Set<Int>()
            for await m in stream {
                if let i = Int(String(decoding: m.payload, as: UTF8.self)) { seen.insert(i) }
                if seen.count == 200 { break }
            }
            return seen
        }
        #expect(received == Set(0..<200), "missing: \(Set(0..<200).subtracting(received).sorted().prefix(20))")
    }

    /// A limit of NATS 2.9's MQTT, which a gateway's topics must respect: a topic with a '.' (a prefix or gateway id
    /// may hold one) is refused by closing the connection, and so is a QoS 2 publish. docs/DEPLOY.md says so.
    @Test func natsClosesTheConnectionOfAPublishToATopicWithADotOrAtQoS2() async throws {
        let cluster = try Self.startCluster()
        try await withRunningClient(Self.configuration(cluster, nodes: [0])) { client, events in
            await events.waitFor { $0.isConnected }
            for message in [
                MQTTMessage(topic: "site.a/gw/status", payload: [1], qos: .atLeastOnce),
                MQTTMessage(topic: "site/gw/status", payload: [1], qos: .exactlyOnce),
            ] {
                await #expect(throws: MQTTError.self, "\(message.topic) at QoS \(message.qos.rawValue)") {
                    try await client.publish(message)
                }
                await events.waitFor(2) { $0.isConnected }
            }
        }
    }
}
