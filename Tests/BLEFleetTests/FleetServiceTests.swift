import BLEPublishing
import BLETestSupport
import Foundation
import Logging
import Testing

@testable import BLEFleet

/// The service as an operator's browser sees it, against a real mosquitto: the overview's event stream follows the
/// broker live, says when the broker goes away, and recovers when it comes back; `/metrics` agrees.
@Suite(.serialized) struct FleetServiceTests {
    static let env = #""run":"r1","seq":1,"ts":1795243043.0,"clock_synced":true"#
    static let online = #"{\#(env),"state":"online","gateway":"gw-a","version":"0.1.0","started":1795243043.0}"#
    static let offline =
        #"{"run":"r1","seq":null,"ts":1795243043.0,"clock_synced":true,"state":"offline","#
        + #""gateway":"gw-a","version":"0.1.0","started":1795243043.0,"reason":"connection lost"}"#

    func mqtt(port: Int, role: String) -> MQTTConfiguration {
        var c = MQTTConfiguration()
        c.host = "127.0.0.1"
        c.port = port
        c.clientID = "fleet-test-\(role)-\(UInt32.random(in: 0...UInt32.max))"
        c.reconnect = .init(minDelay: .milliseconds(100), maxDelay: .milliseconds(300))
        return c
    }

    func gateway(_ view: [String: Any]?, _ id: String) -> [String: Any]? {
        (view?["gateways"] as? [[String: Any]])?.first { $0["id"] as? String == id }
    }

    func brokerConnected(_ view: [String: Any]) -> Bool? { (view["broker"] as? [String: Any])?["connected"] as? Bool }

    @Test(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .timeLimit(.minutes(1)))
    func theOverviewFollowsTheBrokerLiveAndSurvivesItsOutage() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let http = try Loopback.freePort()
        var config = FleetConfiguration(
            mqtt: mqtt(port: broker.port, role: "fleet"),
            brokerURL: "mqtt://127.0.0.1:\(broker.port)", prefix: "t")
        config.listenPort = http
        let service = try FleetService(configuration: config, logger: Logger(label: "fleet-test"))
        let publisher = MQTTClient(configuration: mqtt(port: broker.port, role: "publisher"))
        let connections = publisher.events.filter { if case .connected = $0 { true } else { false } }
        var connected = connections.makeAsyncIterator()

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            group.addTask { try await publisher.run() }
            _ = await connected.next()
            try await publisher.publish(
                MQTTMessage(
                    topic: "t/gw-a/status", payload: Array(Self.online.utf8),
                    retain: true))
            try await offPool { try waitUntilListening(port: http, what: "the fleet service") }

            let events = try EventStreamReader(url: "http://127.0.0.1:\(http)/events/overview")
            let first = await events.next { gateway($0, "gw-a")?["status"] as? String == "online" }
            #expect(first != nil, "gw-a never showed online")
            let metrics = try await offPool { try httpGet("http://127.0.0.1:\(http)/metrics") }
            #expect(metrics.contains("blegateway_gateway_up{gateway=\"gw-a\"} 1\n"))

            broker.kill()
            let gone = await events.next { brokerConnected($0) == false }
            #expect(gone != nil, "the page never said the broker was gone")
            try broker.start()
            let back = await events.next { v in
                brokerConnected(v) == true && ((v["broker"] as? [String: Any])?["reconnects"] as? Int ?? 0) >= 1
            }
            #expect(back != nil, "the service did not reconnect")
            _ = await connected.next()
            try await publisher.publish(MQTTMessage(topic: "t/gw-a/status", payload: Array(Self.offline.utf8)))
            let offline = await events.next { gateway($0, "gw-a")?["status"] as? String == "offline" }
            #expect(gateway(offline, "gw-a")?["statusReason"] as? String == "connection lost")
            group.cancelAll()
        }
    }
}

/// Sites split a large fleet: each site's gateways publish under their own prefix, and a fleet service per site
/// subscribes to its prefix only. Two instances on one broker each see their own site and nothing of the other.
@Suite(.serialized) struct FleetSitesTests {
    func status(_ gw: String) -> [UInt8] {
        Array(
            (#"{"run":"r","seq":1,"ts":1.0,"clock_synced":true,"state":"online","gateway":"\#(gw)","#
                + #""version":"0.1.0","started":1.0}"#).utf8)
    }

    func ids(_ v: [String: Any]?) -> Set<String> {
        Set((v?["gateways"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
    }

    @Test(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .timeLimit(.minutes(1)))
    func twoInstancesWithDisjointSitesOnOneBrokerSeeOnlyTheirOwn() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let tests = FleetServiceTests()
        var services: [(FleetService, Int)] = []
        for site in ["acme/site-a", "acme/site-b"] {
            let http = try Loopback.freePort()
            let role = site.replacingOccurrences(of: "/", with: "-")
            var c = FleetConfiguration(
                mqtt: tests.mqtt(port: broker.port, role: role),
                brokerURL: "mqtt://127.0.0.1:\(broker.port)", prefix: site)
            c.listenPort = http
            services.append((try FleetService(configuration: c, logger: Logger(label: "fleet-test")), http))
        }
        let publisher = MQTTClient(configuration: tests.mqtt(port: broker.port, role: "sites-publisher"))
        var connected = publisher.events.filter { if case .connected = $0 { true } else { false } }.makeAsyncIterator()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (s, _) in services { group.addTask { try await s.run() } }
            group.addTask { try await publisher.run() }
            _ = await connected.next()
            let gateways = [
                ("acme/site-a/gw-a1", "gw-a1"), ("acme/site-a/gw-a2", "gw-a2"),
                ("acme/site-b/gw-b1", "gw-b1"),
            ]
            for (topic, gw) in gateways {
                try await publisher.publish(MQTTMessage(topic: topic + "/status", payload: status(gw), retain: true))
            }
            for (_, http) in services {
                try await offPool { try waitUntilListening(port: http, what: "a fleet service") }
            }
            let a = try EventStreamReader(url: "http://127.0.0.1:\(services[0].1)/events/overview")
            let b = try EventStreamReader(url: "http://127.0.0.1:\(services[1].1)/events/overview")
            let seenA = await a.next { ids($0) == ["gw-a1", "gw-a2"] }
            let seenB = await b.next { ids($0) == ["gw-b1"] }
            #expect(ids(seenA) == ["gw-a1", "gw-a2"])
            #expect(ids(seenB) == ["gw-b1"])
            // Nothing of the other site was even received (not merely hidden).
            #expect(services[0].0.books.withLock { $0.model.counters.messages } == 2)
            #expect(services[1].0.books.withLock { $0.model.counters.messages } == 1)
            group.cancelAll()
        }
    }

    /// One instance can follow a list of sites: it sees every gateway of both, each with its site, and receives
    /// nothing of a third site on the same broker.
    @Test(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .timeLimit(.minutes(1)))
    func oneInstanceFollowsAListOfSitesAndNothingElse() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let tests = FleetServiceTests()
        let http = try Loopback.freePort()
        var c = FleetConfiguration(
            mqtt: tests.mqtt(port: broker.port, role: "two-sites"),
            brokerURL: "mqtt://127.0.0.1:\(broker.port)", sites: ["acme/site-a", "acme/site-b"])
        c.listenPort = http
        let service = try FleetService(configuration: c, logger: Logger(label: "fleet-test"))
        let publisher = MQTTClient(configuration: tests.mqtt(port: broker.port, role: "list-publisher"))
        var connected = publisher.events.filter { if case .connected = $0 { true } else { false } }.makeAsyncIterator()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            group.addTask { try await publisher.run() }
            _ = await connected.next()
            for (topic, gw) in [
                ("acme/site-a/gw-a1", "gw-a1"), ("acme/site-b/gw-b1", "gw-b1"),
                ("acme/site-c/gw-c1", "gw-c1"),
            ] {
                try await publisher.publish(MQTTMessage(topic: topic + "/status", payload: status(gw), retain: true))
            }
            try await offPool { try waitUntilListening(port: http, what: "the fleet service") }
            let events = try EventStreamReader(url: "http://127.0.0.1:\(http)/events/overview")
            let seen = await events.next { ids($0) == ["gw-a1", "gw-b1"] }
            #expect(ids(seen) == ["gw-a1", "gw-b1"])
            let sites = (seen?["gateways"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
                $0[$1["id"] as? String ?? ""] = $1["site"] as? String
            }
            #expect(sites == ["gw-a1": "acme/site-a", "gw-b1": "acme/site-b"])
            #expect(service.books.withLock { $0.model.counters.messages } == 2)
            let metrics = try await offPool { try httpGet("http://127.0.0.1:\(http)/metrics") }
            #expect(metrics.contains(#"blegateway_gateway_up{gateway="gw-b1",site="acme/site-b"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"blegateway_fleet_gateways{prefix="acme/site-a"} 1"#))
            group.cancelAll()
        }
    }
}
