import BLEPublishing
import BLETestSupport
import Foundation
import Testing

extension EndToEndSuites {
    /// Two fleet services for one site on a real NATS cluster (#41): `blegateway fleet` processes, each on its own
    /// node through a relay the test can stall, one active at a time by the lease on `<prefix>/fleet/lease`
    /// (FleetLease). The active one is killed, and later cut off from its node; each time the other takes over within
    /// the lease, presence goes on from where it was (the tag stays in its room: no room change is published again),
    /// the service's status says online again, and the two never act at once: a cut-off instance stops before the
    /// other starts, as their own log lines say, and its renewals, delivered late, change nothing.
    @Suite(
        .enabled(
            if: TestDependency.runs(NatsCluster.isAvailable && Relay.isAvailable),
            "needs /usr/sbin/nats-server and socat (make test installs them)"),
        .timeLimit(.minutes(5)), .serialized)
    struct FleetFailoverTests {
        static let tag = "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-100-1"
        static let leaseS = 6.0
        static let site = OfficeSite.yaml + "\n"
        static let gateways: [(id: String, x: Double, y: Double)] = [
            ("gw-lobby", 4, 4), ("gw-lab", 20, 5), ("gw-kitchen", 10, 16),
        ]

        /// What the observer on the third node saw, in order, with when it arrived.
        final class Observer: @unchecked Sendable {
            struct Seen {
                var at: ContinuousClock.Instant
                var topic: String
                var payload: String
            }
            let client: MQTTClient
            private let lock = NSLock()
            private var seen: [Seen] = []
            private var tasks: [Task<Void, any Error>] = []
            /// Those waiting in `first`, each resumed by the arrival that holds for it or by its limit.
            private var waiters:
                [UUID: (since: ContinuousClock.Instant, holds: (Seen) -> Bool, CheckedContinuation<Seen?, Never>)] = [:]

            init(port: Int) throws {
                var c = MQTTConfiguration()
                c.brokers = [.init(host: "127.0.0.1", port: port)]
                c.protocolVersion = .v311
                c.clientID = "fleet-failover-observer"
                c.reconnect = .init(minDelay: .milliseconds(50), maxDelay: .milliseconds(300), jitter: 0)
                client = MQTTClient(configuration: c)
                let stream = try client.subscribe("ff/fleet/#", qos: .atLeastOnce)
                tasks.append(Task { [client] in try await client.run() })
                tasks.append(
                    Task {
                        for await m in stream {
                            let s = Seen(
                                at: .now, topic: m.topic, payload: String(decoding: m.payload, as: UTF8.self))
                            let woken = self.lock.withLock {
                                self.seen.append(s)
                                let ready = self.waiters.filter { s.at >= $0.value.since && $0.value.holds(s) }
                                for id in ready.keys { self.waiters[id] = nil }
                                return ready.values.map(\.2)
                            }
                            for c in woken { c.resume(returning: s) }
                        }
                    })
            }

            var all: [Seen] { lock.withLock { seen } }

            /// The claims on the lease topic since `since`: (instance, epoch).
            func claims(since: ContinuousClock.Instant) -> [(instance: String, epoch: Int, at: ContinuousClock.Instant)]
            {
                all.filter { $0.topic == "ff/fleet/lease" && $0.at >= since }.compactMap { s in
                    guard let j = try? JSONSerialization.jsonObject(with: Data(s.payload.utf8)) as? [String: Any],
                        let i = j["instance"] as? String, let e = j["epoch"] as? Int
                    else { return nil }
                    return (i, e, s.at)
                }
            }

            /// Waits (woken by the observer's own arrivals, up to `limit`) for a message that `holds`; returns it.
            func first(
                since: ContinuousClock.Instant, limit: Duration, _ holds: @escaping (Seen) -> Bool
            ) async -> Seen? {
                let id = UUID()
                return await withCheckedContinuation { c in
                    let found = lock.withLock {
                        let found = seen.first { $0.at >= since && holds($0) }
                        if found == nil { waiters[id] = (since, holds, c) }
                        return found
                    }
                    if let found { return c.resume(returning: found) }
                    // The limit: whoever is still waiting then gets nothing (an arrival may have resumed it first).
                    Task {
                        try? await Task.sleep(for: limit)
                        self.lock.withLock { self.waiters.removeValue(forKey: id) }?.2.resume(returning: nil)
                    }
                }
            }

            func stop() { for t in tasks { t.cancel() } }
        }

        /// The three gateways' readings of the tag standing in the lab at (21, 3), twice a second, published on n3.
        static func rangeTheTag(_ publisher: MQTTClient) async throws {
            var seq = 1
            while true {
                for g in gateways {
                    let d = ((21 - g.x) * (21 - g.x) + (3 - g.y) * (3 - g.y) + (1.2 - 2.5) * (1.2 - 2.5)).squareRoot()
                    let ts = Date().timeIntervalSince1970
                    let payload =
                        #"{"run":"r-\#(g.id)","seq":\#(seq),"ts":\#(ts),"clock_synced":true,"id":"\#(tag)","#
                        + #""kind":"ibeacon","address":"C4:BB:CA:D0:7F:7D","rssi":-70.5,"samples":4,"interval_s":1,"#
                        + #""distance_m":\#(d),"accuracy_m":\#(0.1 * d + 0.3),"proximity":"far"}"#
                    // Not while the publisher is between connections: a reading lost then is one of many.
                    _ = try? await publisher.publish(
                        MQTTMessage(topic: "ff/\(g.id)/beacons/\(tag)", payload: Array(payload.utf8), qos: .atMostOnce))
                }
                seq += 1
                try await Task.sleep(for: .milliseconds(500))  // cancelled with the test
            }
        }

        /// `blegateway fleet` as instance `name`, through `relay`.
        static func startFleet(_ name: String, relay: Relay, in root: URL) throws -> Child {
            let config = root.appendingPathComponent("\(name).yaml")
            try """
            mqtt:
              protocol: 3
              prefix: ff
            fleet:
              instance: \(name)
              lease_s: \(Int(leaseS))
              listen: 127.0.0.1:0
              site: site.yaml
              homeassistant: {discovery_prefix: ffha}

            """.write(to: config, atomically: true, encoding: .utf8)
            return try Child.unmasked(
                BuiltProducts.blegateway,
                ["fleet", "--config", config.path, "--broker", "mqtt://127.0.0.1:\(relay.port)"],
                log: root.appendingPathComponent("\(name).log").path)
        }

        /// The moments instance `name` started and stopped acting, from its log ("is the active instance", "stops
        /// publishing"), in Unix time to the millisecond (each line says when: "at 1733594123.456").
        static func activity(_ log: String) -> [(started: Bool, at: Double)] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard
                    let at = line.range(of: "at ", options: .backwards).flatMap({ r in
                        Double(line[r.upperBound...].prefix { $0.isNumber || $0 == "." })
                    })
                else { return nil }
                if line.contains("is the active instance") { return (true, at) }
                if line.contains("stops publishing") { return (false, at) }
                return nil
            }
        }

        @Test func oneFleetServiceActsAtATimeAndTheOtherTakesOverWhenItIsKilledOrCutOff() async throws {
            try TestDependency.require(NatsCluster.isAvailable, "/usr/sbin/nats-server")
            try TestDependency.require(Relay.isAvailable, "/usr/bin/socat")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "fleet-failover-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try Self.site.write(to: root.appendingPathComponent("site.yaml"), atomically: true, encoding: .utf8)
            let cluster = try NatsCluster(directory: root.appendingPathComponent("nats"))
            try cluster.start()
            defer { for node in cluster.nodes { cluster.kill(node) } }
            let (n1, n2, n3) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
            let relayA = try Relay(to: n1.mqttPort, log: root.appendingPathComponent("relay-a.log").path)
            let relayB = try Relay(to: n2.mqttPort, log: root.appendingPathComponent("relay-b.log").path)
            defer { (relayA.stop(), relayB.stop()) }
            let observer = try Observer(port: n3.mqttPort)
            defer { observer.stop() }
            await observer.client.subscribed("ff/fleet/#")

            var p = MQTTConfiguration()
            p.brokers = [.init(host: "127.0.0.1", port: n3.mqttPort)]
            p.protocolVersion = .v311
            p.clientID = "fleet-failover-gateways"
            let publisher = MQTTClient(configuration: p)
            let publishing = Task { try await publisher.run() }
            let ranging = Task { try await Self.rangeTheTag(publisher) }
            defer { (ranging.cancel(), publishing.cancel()) }

            let begin = ContinuousClock.now
            var a = try Self.startFleet("fleet-a", relay: relayA, in: root)
            let firstRoom = await observer.first(since: begin, limit: .seconds(60)) {
                $0.topic == "ff/fleet/presence/\(Self.tag)/room"
            }
            #expect(firstRoom?.payload == "Lab", "fleet-a, alone, puts the tag in the lab")
            #expect(observer.claims(since: begin).allSatisfy { $0.instance == "fleet-a" })

            // --- b starts beside it: a standby, it claims nothing while a renews.
            let bStarted = ContinuousClock.now
            let b = try Self.startFleet("fleet-b", relay: relayB, in: root)
            try await Task.sleep(for: .seconds(Self.leaseS * 2))
            #expect(
                !observer.claims(since: bStarted).contains { $0.instance == "fleet-b" },
                "fleet-b claimed while fleet-a held the lease")
            #expect(observer.claims(since: bStarted).contains { $0.instance == "fleet-a" }, "fleet-a renews its lease")

            // --- a is killed: b takes over within the lease (and its settle), says online again, and the tag stays.
            let killed = ContinuousClock.now
            a.stop(SIGKILL)
            let takeover = await observer.first(since: killed, limit: .seconds(Self.leaseS * 4)) {
                $0.topic == "ff/fleet/lease" && $0.payload.contains(#""instance":"fleet-b""#)
            }
            #expect(takeover != nil, "fleet-b never claimed after fleet-a was killed")
            if let takeover { print("fleet failover: fleet-b claimed \(takeover.at - killed) after fleet-a's kill") }
            let online = await observer.first(since: killed, limit: .seconds(Self.leaseS * 4)) {
                $0.topic == "ff/fleet/status" && $0.payload.contains("online")
            }
            #expect(online != nil, "the fleet status never said online again after the takeover")

            // --- a comes back: a standby now; b keeps the lease.
            let aBack = ContinuousClock.now
            a = try Self.startFleet("fleet-a", relay: relayA, in: root)
            try await Task.sleep(for: .seconds(Self.leaseS * 2))
            #expect(
                !observer.claims(since: aBack).contains { $0.instance == "fleet-a" },
                "fleet-a, restarted, claimed while fleet-b held the lease")

            // --- b is cut off from its node (the relay stalls, nothing closes): it fences itself, then a takes over.
            let cut = ContinuousClock.now
            let epochBefore = observer.claims(since: begin).map(\.epoch).max() ?? 0
            relayB.stall()
            let aAgain = await observer.first(since: cut, limit: .seconds(Self.leaseS * 4)) {
                $0.topic == "ff/fleet/lease" && $0.payload.contains(#""instance":"fleet-a""#)
            }
            #expect(aAgain != nil, "fleet-a never claimed after fleet-b was cut off")
            if let aAgain { print("fleet failover: fleet-a claimed \(aAgain.at - cut) after fleet-b's cut") }
            try await Task.sleep(for: .seconds(3))
            relayB.resume()
            try await Task.sleep(for: .seconds(Self.leaseS * 2))
            // Whatever b wrote into the partition arrived late with its old epoch; the lease is a's, one epoch on.
            let after = observer.claims(since: cut)
            let aEpochs = after.filter { $0.instance == "fleet-a" }.map(\.epoch)
            #expect(aEpochs.allSatisfy { $0 > epochBefore }, "fleet-a took over with a higher epoch: \(after)")
            #expect(after.last?.instance == "fleet-a", "the lease ends with fleet-a: \(after.map(\.instance))")

            // The tag stood in the lab all along: one room, however many times the active service changed; and each
            // new active instance went on publishing it.
            let roomMessages = observer.all.filter { $0.topic == "ff/fleet/presence/\(Self.tag)/room" }
            let rooms = roomMessages.map(\.payload)
            #expect(!rooms.isEmpty && rooms.allSatisfy { $0 == "Lab" }, "room topic: \(rooms)")
            for (who, since) in [("fleet-b", takeover?.at), ("fleet-a", aAgain?.at)] {
                #expect(
                    since.map { t in roomMessages.contains { $0.at > t } } == true,
                    "no room published after \(who) took over")
            }

            #expect(a.stop(SIGTERM, limit: .seconds(20)) == true, "fleet-a stops on SIGTERM")
            #expect(b.stop(SIGTERM, limit: .seconds(20)) == true, "fleet-b stops on SIGTERM")

            // Never both: b's acting ended (fenced) no later than a's began again, by their own logs (to the millisecond,
            // one machine's clock).
            let aLog = Self.activity(root.appendingPathComponent("fleet-a.log").path)
            let bLog = Self.activity(root.appendingPathComponent("fleet-b.log").path)
            let bFenced = bLog.first { !$0.started }?.at
            let aResumed = aLog.filter(\.started).dropFirst().first?.at
            #expect(bLog.filter(\.started).count == 1, "fleet-b acted once: \(bLog)")
            if let bFenced, let aResumed {
                print("fleet failover: fleet-b fenced \(aResumed - bFenced) s before fleet-a acted")
            }
            #expect(
                bFenced != nil && aResumed != nil && bFenced! <= aResumed!,
                "fleet-b stopped at \(bFenced.map { "\($0)" } ?? "never"), fleet-a began again at \(aResumed.map { "\($0)" } ?? "never")"
            )
        }
    }
}
