import BLEPublishing
import Foundation
import Logging
import Testing
@testable import BLEFleet

/// The service as an operator's browser sees it, against a real mosquitto: the overview's event stream follows the
/// broker live, says when the broker goes away, and recovers when it comes back; `/metrics` agrees.
@Suite(.serialized) struct FleetServiceTests {
    static let env = #""run":"r1","seq":1,"ts":1795243043.0,"clock_synced":true"#
    static let online = #"{\#(env),"state":"online","gateway":"gw-a","version":"0.1.0","started":1795243043.0}"#
    static let offline = #"{"run":"r1","seq":null,"ts":1795243043.0,"clock_synced":true,"state":"offline","gateway":"gw-a","version":"0.1.0","started":1795243043.0,"reason":"connection lost"}"#

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

    @Test(.enabled(if: LocalBroker.isAvailable), .timeLimit(.minutes(1)))
    func theOverviewFollowsTheBrokerLiveAndSurvivesItsOutage() async throws {
        let broker = try LocalBroker()
        try broker.start()
        let http = try freeLoopbackPort()
        var config = FleetConfiguration(mqtt: mqtt(port: broker.port, role: "fleet"),
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
            try await publisher.publish(MQTTMessage(topic: "t/gw-a/status", payload: Array(Self.online.utf8), retain: true))
            try waitUntilListening(port: http, what: "the fleet service")

            let events = try EventStreamReader(url: "http://127.0.0.1:\(http)/events/overview")
            let first = await events.next { gateway($0, "gw-a")?["status"] as? String == "online" }
            #expect(first != nil, "gw-a never showed online")
            let metrics = try String(decoding: fetch("http://127.0.0.1:\(http)/metrics"), as: UTF8.self)
            #expect(metrics.contains("blegateway_gateway_up{gateway=\"gw-a\"} 1\n"))

            broker.stop()
            #expect(await events.next { brokerConnected($0) == false } != nil, "the page never said the broker was gone")
            try broker.start()
            let back = await events.next { v in
                brokerConnected(v) == true && ((v["broker"] as? [String: Any])?["reconnects"] as? Int ?? 0) >= 1
            }
            #expect(back != nil, "the service did not reconnect")
            _ = await connected.next()
            try await publisher.publish(MQTTMessage(topic: "t/gw-a/status", payload: Array(Self.offline.utf8)))
            let gone = await events.next { gateway($0, "gw-a")?["status"] as? String == "offline" }
            #expect(gateway(gone, "gw-a")?["statusReason"] as? String == "connection lost")
            group.cancelAll()
        }
    }

    /// GET with curl (a real HTTP client), bounded.
    func fetch(_ url: String) throws -> Data {
        let p = Process()
        let out = Pipe()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sf", "--max-time", "5", url]
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return data
    }
}
