import BLEPublishing
import BLETestSupport
import Foundation
import Testing

extension EndToEndSuites {
    /// The zero-loss drill on a clustered broker (#41): ten gateways, real processes fed by the simulator (the office
    /// with seven more receivers), each given the three nodes of a real NATS cluster (`mqtt.brokers`, at random, so
    /// they spread), under MQTT 3.1.1 (all NATS speaks). The subscriber that must lose nothing is a persistent QoS 1
    /// session of its own, on the third node and failing over to the others; beside it one QoS 0 witness on each node
    /// (NATS hands them what a node took at once, outside JetStream, and passes it to every node), each only on its
    /// own node. The nodes are killed and started again in turn, five times: each dies at least once, so every
    /// gateway's node and the subscriber's die under them. Before the first kill and after each node's return, a new
    /// subscription on a live node finds every gateway's retained status and Home Assistant discovery (how soon it
    /// does while the node is dead is measured and printed: NATS's elections take from seconds to minutes); each
    /// gateway's health names a node and counts its failovers.
    ///
    /// The verdict separates the gateway from the broker: no seq may be missing from every subscriber (it was then lost
    /// before NATS passed it on: by the gateway, or by a node that acknowledged it and died at once). A seq a witness
    /// got and the QoS 1 session did not was taken by NATS and lost on its way through JetStream, which can happen:
    /// NATS 2.9 acknowledges a QoS 1 publish once it has passed the message on (server/mqtt.go, mqttProcessPub), not
    /// once the stream a QoS 1 subscription reads from stored it. That loss is held as an intermittent known issue
    /// (docs/DEPLOY.md).
    @Suite(
        .enabled(
            if: TestDependency.runs(NatsCluster.isAvailable), "needs /usr/sbin/nats-server (make test installs it)"),
        .timeLimit(.minutes(10)), .serialized)
    struct ClusterZeroLossTests {
        /// The office's three gateways and seven more, spread over its rooms (the office's site places them).
        static let gateways = ["gw-lobby", "gw-lab", "gw-kitchen"] + extra.map(\.id)
        static let extra: [(id: String, position: String, room: String)] = [
            ("gw-04", "[2, 8, 2.5]", "lobby"), ("gw-05", "[24, 8, 2.5]", "lab"), ("gw-06", "[16, 1, 2.5]", "lab"),
            ("gw-07", "[3, 10.5, 2.5]", "corridor"), ("gw-08", "[13, 10.5, 2.5]", "corridor"),
            ("gw-09", "[23, 10.5, 2.5]", "corridor"), ("gw-10", "[12, 19, 2.5]", "kitchen"),
        ]

        /// The office scenario with the seven extra receivers, written to `root`; its path.
        static func tenGatewayOffice(in root: URL) throws -> String {
            let office = try String(
                contentsOf: BuiltProducts.repositoryRoot.appendingPathComponent("config/scenarios/office.yaml"),
                encoding: .utf8)
            let site = try #require(
                office.range(of: "\nsite:\n"),
                "office.yaml has a top-level site: the drill adds its receivers before it")
            let lines = extra.enumerated().map { i, g in
                "  - {id: \(g.id), position: \(g.position), room: \(g.room), "
                    + "address: \"00:1B:DC:F0:00:\(String(format: "%02X", i + 4))\", max_connections: 5}\n"
            }
            let path = root.appendingPathComponent("office-ten.yaml")
            var text = office
            text.insert(contentsOf: "\n" + lines.joined().dropLast(), at: site.lowerBound)
            try text.write(to: path, atomically: true, encoding: .utf8)
            return path.path
        }

        @Test func noReadingOfTenGatewaysIsLostWhileEveryNodeDiesInTurn() async throws {
            try TestDependency.require(NatsCluster.isAvailable, "/usr/sbin/nats-server")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "zl-cluster-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let cluster = try NatsCluster(directory: root.appendingPathComponent("nats"))
            try cluster.start()
            defer { for node in cluster.nodes { cluster.kill(node) } }
            let (sim, _) = try await ZeroLossTests.startOffice(in: root, scenario: try Self.tenGatewayOffice(in: root))
            defer { sim.stop() }
            let nodes = cluster.nodes
            // The session starts on the third node and fails over to the others; a witness stays on each node.
            let session = try ZeroLossTests.Subscriber(
                ports: [nodes[2], nodes[0], nodes[1]].map(\.mqttPort), prefix: "zc", protocolVersion: .v311)
            let witnesses = try nodes.map { node in
                try ZeroLossTests.Subscriber(
                    ports: [node.mqttPort], prefix: "zc", protocolVersion: .v311, qos: .atMostOnce,
                    clientID: "zero-loss-witness-\(node.name)")
            }
            defer { for s in [session] + witnesses { s.stop() } }
            for s in [session] + witnesses { await s.client.subscribed("zc/#") }

            var running = try Self.startGateways(
                Self.gateways, brokers: nodes.map(\.url), failover: "random", in: root)
            // Before any kill, the retained messages are all there: what the kills must not take away.
            var retainedKept = try await Self.retainedMissing(on: nodes[2].mqttPort).isEmpty
            #expect(retainedKept, "before any kill, n3 serves every gateway's retained status and discovery")

            var rng = SystemRandomNumberGenerator()
            // n3 (the session's node) first, then the others, then n3 and n1 again: each node dies at least once.
            for node in [nodes[2], nodes[0], nodes[1], nodes[2], nodes[0]] {
                let survivor = nodes.first { $0.name != node.name }!
                cluster.kill(node)
                // Measured, not asserted: how soon a survivor serves the retained messages while the node is dead
                // (3–42 s in most runs; once, under CI, more than 90 s).
                let started = ContinuousClock.now
                let during = try await Self.retainedMissing(on: survivor.mqttPort, limit: .seconds(30))
                print(
                    "cluster drill: \(node.name) killed; retained "
                        + (during.isEmpty
                            ? "complete on \(survivor.name) after \(ContinuousClock.now - started)"
                            : "not complete on \(survivor.name) within 30 s"))
                try await Task.sleep(for: .milliseconds(Int.random(in: 1000...3000, using: &rng)))
                try cluster.start(node)
                // Asserted: once the node is back, nothing retained was lost.
                let missing = try await Self.retainedMissing(on: node.mqttPort, limit: .seconds(120))
                #expect(missing.isEmpty, "after \(node.name)'s death and return, the retained messages lack \(missing)")
                retainedKept = retainedKept && missing.isEmpty
                try await Task.sleep(for: .milliseconds(Int.random(in: 1000...3000, using: &rng)))
            }
            try await Task.sleep(for: .seconds(8))

            let ports = nodes.map(\.mqttPort)
            func broker(of id: String) -> String? {
                let health = session.messages.filter { $0.topic == "zc/\(id)/health" }.last
                let publish = health.flatMap { Self.json($0.payload)?["publish"] as? [String: Any] }
                return publish?["broker"] as? String
            }
            // A health taken between two connections names no broker (true then) and reaches the session once the
            // gateway is back; one whose node died in the last kill may still be in its reconnection backoff. Each
            // must report from a node of its own within a minute; the expectations below say which did not.
            try? await EndToEndSuites.waitFor("every gateway's health from a node", limit: .seconds(60)) {
                Self.gateways.allSatisfy { id in
                    broker(of: id).map { b in ports.contains { b.hasSuffix(":\($0)") } } == true
                }
            }
            for id in Self.gateways {
                let health = session.messages.filter { $0.topic == "zc/\(id)/health" }.last
                let publish = health.flatMap { Self.json($0.payload)?["publish"] as? [String: Any] }
                let broker = broker(of: id)
                #expect(
                    broker.map { b in ports.contains { b.hasSuffix(":\($0)") } } == true,
                    "\(id)'s health names one of its nodes: \(broker ?? "none")")
                #expect((publish?["failovers"] as? Int ?? 0) >= 1, "\(id)'s node died under it: \(publish ?? [:])")
                #expect(running[id]?.stop(SIGTERM, limit: .seconds(20)) == true, "\(id) stops on SIGTERM")
            }
            running = [:]
            try await Task.sleep(for: .seconds(3))
            let complete =
                Self.expectNothingLostByTheGateways(Self.gateways, session: session, witnesses: witnesses)
                && retainedKept
            if complete { try? FileManager.default.removeItem(at: root) }
        }

        /// The two subscribers of the network-cut drill on `node`: a persistent QoS 1 session and a QoS 0 witness,
        /// both subscribed (their SUBACKs came) when this returns.
        static func subscribers(on node: NatsCluster.Node) async throws -> (
            session: ZeroLossTests.Subscriber, witness: ZeroLossTests.Subscriber
        ) {
            let session = try ZeroLossTests.Subscriber(ports: [node.mqttPort], prefix: "zc", protocolVersion: .v311)
            let witness = try ZeroLossTests.Subscriber(
                ports: [node.mqttPort], prefix: "zc", protocolVersion: .v311, qos: .atMostOnce,
                clientID: "zero-loss-witness")
            await session.client.subscribed("zc/#")
            await witness.client.subscribed("zc/#")
            return (session, witness)
        }

        /// The gateways `ids` as real processes on the simulator's sockets in `root`/sim, each given `brokers`.
        static func startGateways(
            _ ids: [String], brokers: [String], failover: String, in root: URL
        ) throws -> [String: Child] {
            let config = root.appendingPathComponent("gateway.yaml")
            try """
            mqtt:
              protocol: 3
              keepalive_s: 5
              reconnect_min_s: 0.2
              reconnect_max_s: 1
              failover: \(failover)
              brokers: [\(brokers.joined(separator: ", "))]
            publishing:
              health_interval_s: 5
            homeassistant: {enabled: true, discovery_prefix: zcha}

            """.write(to: config, atomically: true, encoding: .utf8)
            var running: [String: Child] = [:]
            for id in ids {
                running[id] = try Child(
                    BuiltProducts.blegateway,
                    [
                        "run", "--gateway-id", id, "--device", "unix:\(root.path)/sim/\(id).sock", "--prefix", "zc",
                        "--spool", root.appendingPathComponent("\(id).sqlite").path, "--config", config.path,
                    ],
                    log: root.appendingPathComponent("\(id).log").path)
            }
            return running
        }

        /// The verdict, once the gateways stopped gracefully: for each, every seq reached NATS (some subscriber) and
        /// the offline status came last; a seq only a witness got is NATS's loss, an intermittent known issue.
        /// Returns whether nothing at all was missing.
        static func expectNothingLostByTheGateways(
            _ ids: [String], session: ZeroLossTests.Subscriber, witnesses: [ZeroLossTests.Subscriber]
        ) -> Bool {
            var complete = true
            for id in ids {
                let mine = { (s: ZeroLossTests.Subscriber) in s.messages.filter { $0.topic.hasPrefix("zc/\(id)/") } }
                let durable = mine(session)
                let witnessed = witnesses.flatMap(mine)
                complete =
                    ZeroLossTests.expectEverySeq(
                        durable + witnessed, subscriber: session, status: "zc/\(id)/status", atLeast: 100, will: false)
                    && complete
                let top = durable.map(\.seq).max() ?? 0
                let lostByNATS = Set(1...max(top, 1)).subtracting(durable.map(\.seq)).sorted()
                print(
                    "cluster drill: \(id) \(top) readings, \(lostByNATS.count) missing from the QoS 1 session "
                        + "(all witnessed at QoS 0: \(Set(lostByNATS).isSubset(of: witnessed.map(\.seq))))")
                withKnownIssue(
                    "NATS 2.9 acknowledges a QoS 1 publish before the stream a QoS 1 subscription reads from has stored it",
                    isIntermittent: true
                ) {
                    #expect(lostByNATS.isEmpty, "\(id): \(lostByNATS.count) seqs, from \(lostByNATS.first ?? 0)")
                }
                complete = complete && lostByNATS.isEmpty
            }
            return complete
        }

        /// The network between a gateway and its node fails without either end closing anything: the gateway reaches
        /// the first node through a TCP relay that stops forwarding for 20 s (four keepalives). The gateway gives the
        /// silent connection up at its keepalive and fails over to the second node, whose session takeover closes
        /// the first node's half-open connection; every reading reaches the subscribers on the third.
        @Test func noReadingIsLostWhenTheNetworkToTheGatewaysNodeStalls() async throws {
            try TestDependency.require(NatsCluster.isAvailable, "/usr/sbin/nats-server")
            try TestDependency.require(Relay.isAvailable, "/usr/bin/socat")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "zl-cluster-cut-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let cluster = try NatsCluster(directory: root.appendingPathComponent("nats"))
            try cluster.start()
            defer { for node in cluster.nodes { cluster.kill(node) } }
            let relay = try Relay(to: cluster.nodes[0].mqttPort, log: root.appendingPathComponent("relay.log").path)
            defer { relay.stop() }
            let (sim, _) = try await ZeroLossTests.startOffice(in: root)
            defer { sim.stop() }
            let (session, witness) = try await Self.subscribers(on: cluster.nodes[2])
            defer { (session.stop(), witness.stop()) }
            let ids = ["gw-lobby"]
            var running = try Self.startGateways(
                ids, brokers: ["mqtt://127.0.0.1:\(relay.port)", cluster.nodes[1].url], failover: "in_order", in: root)
            try await Task.sleep(for: .seconds(5))
            relay.stall()
            try await EndToEndSuites.waitFor("gw-lobby's health from the second node", limit: .seconds(30)) {
                session.messages.contains {
                    $0.topic == "zc/gw-lobby/health"
                        && $0.payload.contains("\"broker\":\"\(cluster.nodes[1].url.dropFirst(7))\"")
                }
            }
            try await Task.sleep(for: .seconds(20))
            relay.resume()
            try await Task.sleep(for: .seconds(5))
            #expect(running["gw-lobby"]?.stop(SIGTERM, limit: .seconds(20)) == true, "gw-lobby stops on SIGTERM")
            running = [:]
            try await Task.sleep(for: .seconds(3))
            if Self.expectNothingLostByTheGateways(ids, session: session, witnesses: [witness]) {
                try? FileManager.default.removeItem(at: root)
            }
        }

        static func json(_ text: String) -> [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        }

        /// What a new subscription on `port` does not find among the retained messages every gateway keeps: its
        /// status and its Home Assistant device document. Tried with a new subscription each time (a subscription
        /// finds retained messages only when it is made), until complete or `limit`: the survivors serve the dead node's
        /// retained messages once they have elected new leaders for its streams (NatsClusterTests).
        static func retainedMissing(
            on port: Int, of ids: [String] = gateways, limit: Duration = .seconds(120)
        ) async throws -> [String] {
            var missing = ["every gateway's retained status and discovery"]
            let deadline = ContinuousClock.now + limit
            while !missing.isEmpty && ContinuousClock.now < deadline {
                var c = MQTTConfiguration()
                c.brokers = [.init(host: "127.0.0.1", port: port)]
                c.protocolVersion = .v311
                c.clientID = "zc-retained-\(UUID().uuidString.prefix(6))"
                let client = MQTTClient(configuration: c)
                let stream = try client.subscribe(["zc/+/status", "zcha/#"])
                let runner = Task { try await client.run() }
                let collector = Task {
                    var topics = Set<String>()
                    for await m in stream where m.retain { topics.insert(m.topic) }
                    return topics
                }
                try? await Task.sleep(for: .seconds(3))
                runner.cancel()
                _ = try? await runner.value
                collector.cancel()
                let seen = await collector.value
                missing = ids.flatMap { id in
                    [
                        seen.contains("zc/\(id)/status") ? nil : "zc/\(id)/status",
                        seen.contains { $0.hasPrefix("zcha/") && $0.contains(id) } ? nil : "zcha/…/\(id)…",
                    ].compactMap { $0 }
                }
            }
            return missing
        }
    }
}
