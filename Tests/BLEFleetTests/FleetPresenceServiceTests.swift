import BLEPublishing
import BLETestSupport
import Foundation
import Logging
import Testing

@testable import BLEFleet

/// Presence through the broker, as a deployment runs it against a real mosquitto: gateways' beacon topics in, the
/// retained `<prefix>/fleet/presence/<beacon-id>` out, Home Assistant's device tracker announced, and a site
/// description pushed retained taking over (or, when bad, refused with the one in force kept).
@Suite(.serialized) struct FleetPresenceServiceTests {
    static let tag = "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-100-1"

    /// A gateway's beacon topic payload (docs/TOPICS.md) for the tag at (x, y).
    /// `clockOffset`: how far the gateway's clock is from the true time; `synced`: what it says of it.
    static func beacon(
        _ gateway: SiteDescription.Gateway, at p: (Double, Double), seq: Int,
        clockOffset: Double = 0, synced: Bool = true
    ) -> [UInt8] {
        let q = gateway.position!
        let d = ((p.0 - q.x) * (p.0 - q.x) + (p.1 - q.y) * (p.1 - q.y) + (1.2 - q.z) * (1.2 - q.z)).squareRoot()
        let ts = Date().timeIntervalSince1970 + clockOffset
        return Array(
            (#"{"run":"r-\#(gateway.id)","seq":\#(seq),"ts":\#(ts),"clock_synced":\#(synced),"id":"\#(tag)","#
                + #""kind":"ibeacon","address":"C4:BB:CA:D0:7F:7D","rssi":-70.5,"samples":4,"interval_s":1,"#
                + #""distance_m":\#(d),"accuracy_m":\#(0.1 * d + 0.3),"proximity":"far"}"#).utf8)
    }

    /// Every gateway of the site ranges the tag at (21, 3) in the lab, twice a second, until cancelled; `clocks`: a
    /// gateway's clock offset and what it says of it (default: right, and synchronised).
    static func rangeTheTagInTheLab(
        _ publisher: MQTTClient, site: SiteDescription, clocks: [String: (offset: Double, synced: Bool)] = [:]
    ) async throws {
        var seq = 1
        while true {
            for g in site.gateways.values {
                let c = clocks[g.id] ?? (0, true)
                try await publisher.publish(
                    MQTTMessage(
                        topic: "t/\(g.id)/beacons/\(Self.tag)",
                        payload: Self.beacon(g, at: (21, 3), seq: seq, clockOffset: c.offset, synced: c.synced),
                        qos: .atMostOnce))
            }
            seq += 1
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    func next(_ messages: AsyncStream<MQTTMessage>, _ where: (MQTTMessage, [String: Any]) -> Bool) async -> [String:
        Any]?
    {
        for await m in messages {
            guard let json = try? JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any] else {
                continue
            }
            if `where`(m, json) { return json }
        }
        return nil
    }

    @Test(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .timeLimit(.minutes(1)))
    func beaconReadingsBecomeARetainedRoomAHomeAssistantTrackerAndFollowAPushedSite() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let http = try Loopback.freePort()
        let tests = FleetServiceTests()
        let site = try SiteDescription(text: SiteDescriptionTests.office)
        var config = FleetConfiguration(
            mqtt: tests.mqtt(port: broker.port, role: "presence"),
            brokerURL: "mqtt://127.0.0.1:\(broker.port)", prefix: "t")
        config.listenPort = http
        config.site = site
        config.homeAssistantDiscoveryPrefix = "ha"
        let service = try FleetService(configuration: config, logger: Logger(label: "fleet-test"))
        let publisher = MQTTClient(configuration: tests.mqtt(port: broker.port, role: "presence-gateways"))
        let presence = try publisher.subscribe("t/fleet/presence/+")
        let roomTopic = try publisher.subscribe("t/fleet/presence/+/room")
        let discovery = try publisher.subscribe("ha/device_tracker/+/config")
        let status = try publisher.subscribe("t/fleet/status")
        let occupancy = try publisher.subscribe("t/fleet/rooms/+")
        let roomDocuments = try publisher.subscribe("ha/device/blegateway-fleet/+/config")
        var connected = publisher.events.filter { if case .connected = $0 { true } else { false } }.makeAsyncIterator()

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            group.addTask { try await publisher.run() }
            _ = await connected.next()
            // Three gateways range the tag in the lab, twice a second, as long as the test runs.
            group.addTask { try await Self.rangeTheTagInTheLab(publisher, site: site) }
            // The first report may come from the readings of fewer than three gateways (on a loaded machine one
            // gateway's can arrive a moment late): the one that has all three trilaterates, into the lab.
            let inLab = await next(presence) { m, j in
                m.topic == "t/fleet/presence/\(Self.tag)" && (j["gateways"] as? [[String: Any]])?.count == 3
            }
            #expect(inLab?["room"] as? String == "lab")
            #expect(inLab?["method"] as? String == "trilateration")
            try await offPool { try waitUntilListening(port: http, what: "the fleet service") }
            let metrics = try await offPool { try httpGet("http://127.0.0.1:\(http)/metrics") }
            #expect(metrics.contains("blegateway_presence_tags{site=\"t\"} 1\n"), "\(metrics.suffix(800))")
            var rooms = roomTopic.makeAsyncIterator()
            let room = await rooms.next()
            // The room's name from the site, which is what Home Assistant's tracker shows.
            #expect(
                room?.topic == "t/fleet/presence/\(Self.tag)/room" && room?.payload == Array("Lab".utf8)
                    && room?.retain == false)

            // Its unique id carries the site: the same beacon id in another site is another tag.
            let tracker = await next(discovery) { m, _ in m.topic.hasPrefix("ha/device_tracker/blegateway_tag_t_") }
            #expect((tracker?["unique_id"] as? String)?.hasPrefix("blegateway_tag_t_ibeacon_") == true)
            #expect(tracker?["source_type"] as? String == "bluetooth_le")
            #expect(tracker?["state_topic"] as? String == "t/fleet/presence/\(Self.tag)/room")
            #expect(tracker?["json_attributes_topic"] as? String == "t/fleet/presence/\(Self.tag)")
            #expect(tracker?["payload_not_home"] as? String == "not_home")
            // Available while the fleet service says online on its own retained status (its last will says offline).
            let availability = (tracker?["availability"] as? [[String: Any]])?.first
            #expect(availability?["topic"] as? String == "t/fleet/status")
            #expect(availability?["payload_not_available"] as? String == "offline")
            let online = await next(status) { _, j in j["state"] as? String == "online" }
            #expect(online != nil)
            // The lab is occupied by the tag; its device in Home Assistant has the occupancy and the count.
            let lab = await next(occupancy) { m, j in m.topic == "t/fleet/rooms/lab" && j["occupied"] as? Bool == true }
            #expect(lab?["count"] as? Int == 1 && lab?["tags"] as? [String] == [Self.tag])
            let labDevice = await next(roomDocuments) { m, _ in m.topic.hasSuffix("/blegateway_room_t_lab/config") }
            #expect((labDevice?["dev"] as? [String: Any])?["suggested_area"] as? String == "Lab")

            // A pushed description that does not parse is refused; the configured one stays in force.
            try await publisher.publish(
                MQTTMessage(topic: "t/fleet/site", payload: Array("rooms: [{id: a}]".utf8), retain: true))
            try await offPool { try waitUntilListening(port: http, what: "the fleet service") }
            let events = try EventStreamReader(url: "http://127.0.0.1:\(http)/events/presence")
            let refused = await events.next { v in
                ((v["sites"] as? [[String: Any]])?.first?["refused"] as? String)?.contains("polygon") == true
            }
            #expect(refused != nil, "the page never showed the refused description")

            // A valid one takes over: here without positions, so presence is by the nearest gateway, and says so.
            var unplaced = SiteDescriptionTests.office.replacingOccurrences(of: "position: [4, 4, 2.5], ", with: "")
            unplaced = unplaced.replacingOccurrences(of: "position: [20, 5, 2.5], ", with: "")
            unplaced = unplaced.replacingOccurrences(of: "position: [10, 16, 2.5], ", with: "")
            // The readings' generator still needs positions: the service only reads the description's.
            try await publisher.publish(MQTTMessage(topic: "t/fleet/site", payload: Array(unplaced.utf8), retain: true))
            let nearest = await next(presence) { _, j in j["method"] as? String == "nearest_gateway" }
            #expect(nearest?["room"] as? String == "lab")
            #expect(service.presence.withLock { $0.sites["t"]?.source } == .retained)
            group.cancelAll()
        }
    }

    /// Bad input (#36): gateways whose clocks are minutes apart. Two Pis without a real-time clock started from the
    /// time they last saved and NTP has not answered (`clock_synced: false`): one is three minutes behind, one two
    /// ahead. Combined by their own times, the one ahead would leave the others out of every fit (and the one behind
    /// would never count); placed by when their readings arrive, all three count, and each is a fleet problem that
    /// says how far off its clock is.
    @Test(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .timeLimit(.minutes(1)))
    func gatewaysWhoseClocksAreMinutesApartAllCountAndEachOffClockIsAProblem() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let tests = FleetServiceTests()
        let site = try SiteDescription(text: SiteDescriptionTests.office)
        var config = FleetConfiguration(
            mqtt: tests.mqtt(port: broker.port, role: "presence"),
            brokerURL: "mqtt://127.0.0.1:\(broker.port)", prefix: "t")
        config.listenPort = try Loopback.freePort()
        config.site = site
        let service = try FleetService(configuration: config, logger: Logger(label: "fleet-test"))
        let publisher = MQTTClient(configuration: tests.mqtt(port: broker.port, role: "presence-gateways"))
        let presence = try publisher.subscribe("t/fleet/presence/+")
        var connected = publisher.events.filter { if case .connected = $0 { true } else { false } }.makeAsyncIterator()
        let clocks: [String: (offset: Double, synced: Bool)] = [
            "gw-lobby": (-180, false), "gw-kitchen": (120, false), "gw-lab": (0, true),
        ]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            group.addTask { try await publisher.run() }
            _ = await connected.next()
            group.addTask { try await Self.rangeTheTagInTheLab(publisher, site: site, clocks: clocks) }
            let all = await next(presence) { _, j in (j["gateways"] as? [[String: Any]])?.count == 3 }
            #expect(all?["room"] as? String == "lab")
            #expect(all?["method"] as? String == "trilateration")
            let problems = service.books.withLock { b in b.model.gateways.mapValues { $0.problems.map(\.text) } }
            #expect(
                problems["gw-lobby"]?.contains {
                    $0.hasPrefix("clock 18") && $0.contains(" s behind the fleet service's (not synchronised")
                } == true, "\(problems)")
            #expect(
                problems["gw-kitchen"]?.contains { $0.hasPrefix("clock 120 s ahead of the fleet service's") } == true,
                "\(problems)")
            #expect(problems["gw-lab"]?.contains { $0.hasPrefix("clock") } == false, "\(problems)")
            group.cancelAll()
        }
    }
}
