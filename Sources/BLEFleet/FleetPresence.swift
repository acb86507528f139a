import BLETransport
import Foundation

/// Presence for every site the service follows (docs/PRESENCE.md): each site's description, where it came from, and
/// its engine. A site's description is the one pushed retained on `<site>/fleet/site` when there is one, else the
/// configured one (`fleet.site`, which describes the first site); a pushed document that does not parse is bad input,
/// shown and logged, and the description in force stays. Pure: the service feeds it and publishes what it returns.
public struct FleetPresence: Sendable {
    public enum Source: String, Sendable, Encodable {
        case configuration
        case retained
    }

    public struct Site: Sendable {
        public var engine: PresenceEngine
        public var source: Source
        /// The newest pushed document that was refused, and why.
        public var refused: String?
    }

    public let configured: SiteDescription?
    public private(set) var sites: [String: Site] = [:]
    /// Beacons whose discovery document was published, per site (bounded by `max_tags`).
    var announced: [String: Set<String>] = [:]
    /// Reports the broker connection could not take (each is sent again within the heartbeat).
    public internal(set) var notPublished = 0
    /// Per site, who is in which room; and the rooms whose occupancy is still to be published (with the rooms a new
    /// description removed, and whether their Home Assistant documents are to be published too).
    var occupancy: [String: RoomOccupancy] = [:]
    var roomChanges: [RoomChange] = []
    /// Per site, room changes the broker connection did not take: the rooms a removal left to empty, and whether a
    /// document was among them. Every room of the site goes again at the next connection (a retained state is the
    /// room's last word, so sending all is as good as sending the lost ones, and a room lost on the wire is not
    /// left showing someone for ever).
    var roomsUnsent: [String: (removed: Set<String>, announce: Bool, gateways: Set<String>)] = [:]

    struct RoomChange: Sendable, Equatable {
        var prefix: String
        var rooms: [RoomOccupancy.Room]
        var removed: [String] = []
        var announce = false
        /// Gateways the site no longer places: their area documents are removed.
        var removedGateways: [String] = []
    }

    /// Per site, the gateways whose area documents were decided (GatewayAreaDiscovery).
    var placedGateways: [String: Set<String>] = [:]

    public init(sites prefixes: [String], configured: SiteDescription?) {
        self.configured = configured
        if let configured {
            sites[prefixes[0]] = Site(engine: PresenceEngine(site: configured), source: .configuration)
            roomsChanged(prefixes[0], configured)
        }
    }

    /// A site's description in force changed: every room of it is published, with its document.
    private mutating func roomsChanged(_ prefix: String, _ site: SiteDescription) {
        let (rooms, removed) = occupancy[prefix, default: RoomOccupancy()].site(site)
        let gateways = Set(site.gateways.keys)
        let gone = (placedGateways[prefix] ?? []).subtracting(gateways).sorted()
        placedGateways[prefix] = gateways
        roomChanges.append(
            RoomChange(prefix: prefix, rooms: rooms, removed: removed, announce: true, removedGateways: gone))
    }

    /// The rooms to publish since the last call.
    mutating func takeRoomChanges() -> [RoomChange] {
        defer { roomChanges = [] }
        return roomChanges
    }

    /// The topic a site's description is pushed to.
    public static func siteTopic(_ prefix: String) -> String { "\(prefix)/fleet/site" }
    public static func presenceTopic(_ prefix: String, beacon: String) -> String {
        "\(prefix)/fleet/presence/\(beacon)"
    }
    /// The room alone, as plain text: its name from the site (`not_home` when away): what a device tracker's state is
    /// read from, so Home Assistant shows "Kitchen", not the room's id.
    public static func roomTopic(_ prefix: String, beacon: String) -> String {
        "\(prefix)/fleet/presence/\(beacon)/room"
    }

    /// The fleet service's own retained status (`{"state":"online"}`, and its last will `{"state":"offline"}`): the
    /// trackers' availability, so a stopped service leaves nobody in their last room.
    public static func statusTopic(_ prefix: String) -> String { "\(prefix)/fleet/status" }

    /// The status payload: `online` while the service is connected; `offline` is its last will.
    public static func statusPayload(online: Bool) -> [UInt8] {
        Array(#"{"state":"\#(online ? "online" : "offline")"}"#.utf8)
    }

    /// What the room topic carries for a report: the room's name (its id when the site gives none), or `not_home`.
    static func roomState(_ r: PresenceEngine.Report, site: SiteDescription) -> String {
        guard let id = r.room else { return PresencePayload.notHome }
        let name = site.room(id).map { PrintableText.line($0.name) } ?? ""
        return name.isEmpty ? id : name
    }

    /// A message on `<prefix>/fleet/site`: a new description (or, empty, back to the configured one). Returns the
    /// problem when the document is refused.
    public mutating func receiveSite(_ prefix: String, payload: [UInt8], isFirstSite: Bool) -> SiteDescription.Problem?
    {
        if payload.isEmpty {
            if isFirstSite, let configured {
                replace(prefix, configured, source: .configuration)
            } else {
                sites[prefix] = nil
                announced[prefix] = nil
                let gateways = (placedGateways.removeValue(forKey: prefix) ?? []).sorted()
                let gone = occupancy.removeValue(forKey: prefix)
                if !(gone?.rooms.isEmpty ?? true) || !gateways.isEmpty {
                    roomChanges.append(
                        RoomChange(prefix: prefix, rooms: [], removed: gone?.rooms ?? [], removedGateways: gateways))
                }
            }
            return nil
        }
        do {
            let site = try SiteDescription(text: String(decoding: payload, as: UTF8.self), path: Self.siteTopic(prefix))
            replace(prefix, site, source: .retained)
            return nil
        } catch let problem as SiteDescription.Problem {
            sites[prefix]?.refused = problem.description
            return problem
        } catch {
            let problem = SiteDescription.Problem(path: Self.siteTopic(prefix), reason: "\(error)")
            sites[prefix]?.refused = problem.description
            return problem
        }
    }

    private mutating func replace(_ prefix: String, _ site: SiteDescription, source: Source) {
        if sites[prefix] == nil {
            sites[prefix] = Site(engine: PresenceEngine(site: site), source: source)
        } else {
            sites[prefix]!.engine.replaceSite(site)
            sites[prefix]!.source = source
            sites[prefix]!.refused = nil
            // A tag renamed in the new description: its tracker's document again, with the name.
            announced[prefix] = nil
        }
        roomsChanged(prefix, site)
    }

    /// One gateway's beacon reading, under `prefix`.
    public mutating func observe(
        _ prefix: String, gateway: String, beacon: String, reading: FleetGateway.Beacon, now: Double
    ) {
        guard sites[prefix] != nil else { return }
        sites[prefix]!.engine.observe(
            beacon: beacon,
            reading: .init(
                gateway: gateway, distance: reading.distanceM, accuracy: reading.accuracyM, rssi: reading.rssi,
                ts: reading.serviceTs),
            now: now)
    }

    /// Every site's reports due now, with the site they belong to.
    public mutating func tick(now: Double) -> [(prefix: String, report: PresenceEngine.Report)] {
        var out: [(String, PresenceEngine.Report)] = []
        for prefix in sites.keys.sorted() {
            for r in sites[prefix]!.engine.tick(now: now) {
                out.append((prefix, r))
                // Only people fill rooms, when the site names any (a sensor on a shelf is no one in the room).
                let person = sites[prefix]!.engine.site.countsAsPerson(r.beacon)
                let changed = occupancy[prefix, default: RoomOccupancy()].report(
                    beacon: r.beacon, room: person ? r.room : nil)
                if !changed.isEmpty { roomChanges.append(RoomChange(prefix: prefix, rooms: changed)) }
            }
        }
        return out
    }

    /// Whether `beacon`'s Home Assistant document is still to be published (and, if so, now counted as published).
    mutating func announce(_ prefix: String, beacon: String) -> Bool {
        announced[prefix, default: []].insert(beacon).inserted
    }

    /// Home Assistant forgot its entities (it said `online` again): every tag is announced again, and every room.
    mutating func forgetAnnouncements() {
        announced = [:]
        for (prefix, o) in occupancy.sorted(by: { $0.key < $1.key }) {
            roomChanges.append(RoomChange(prefix: prefix, rooms: o.rooms.map(o.occupancy(of:)), announce: true))
        }
    }

    /// This instance became the site's active fleet service: every tag's report at the next tick and every room
    /// with its document, whole (what a standby decided was never published; where the instance before agreed, the
    /// retained state does not change).
    mutating func takeOver() {
        for prefix in sites.keys { sites[prefix]!.engine.republishAll() }
        forgetAnnouncements()
    }

    /// A room change did not reach the broker: its site's rooms go again at the next connection.
    mutating func roomsNotPublished(_ change: RoomChange) {
        var unsent = roomsUnsent[change.prefix] ?? ([], false, [])
        unsent.removed.formUnion(change.removed)
        unsent.gateways.formUnion(change.removedGateways)
        unsent.announce = unsent.announce || change.announce
        roomsUnsent[change.prefix] = unsent
    }

    /// Connected: the rooms of every site whose changes were lost are published again, whole.
    mutating func connected() {
        for (prefix, unsent) in roomsUnsent.sorted(by: { $0.key < $1.key }) {
            guard let o = occupancy[prefix] else { continue }
            roomChanges.append(
                RoomChange(
                    prefix: prefix, rooms: o.rooms.map(o.occupancy(of:)),
                    removed: unsent.removed.filter { !o.rooms.contains($0) }.sorted(), announce: unsent.announce,
                    removedGateways: unsent.gateways.subtracting(placedGateways[prefix] ?? []).sorted()))
        }
        roomsUnsent = [:]
    }
}

/// The retained presence payload (docs/TOPICS.md, `<prefix>/fleet/presence/<beacon-id>`), its properties spelled as
/// the schema's snake_case keys.
// swift-format-ignore: AlwaysUseLowerCamelCase
enum PresencePayload {
    struct Body: Encodable {
        var ts: Double
        var beacon: String
        /// The room's id, or `not_home`.
        var room: String
        var room_name: String?
        var floor: String?
        var since: Double
        var confidence: Double
        var method: String
        var position: Position?
        var gateways: [Heard]
    }

    struct Position: Encodable {
        var x: Double
        var y: Double
        var floor: String
        var error_m: Double
    }

    struct Heard: Encodable {
        var gateway: String
        var distance_m: Double
        var accuracy_m: Double?
        var rssi: Double?
        var ts: Double
    }

    static let notHome = "not_home"

    static func encode(_ r: PresenceEngine.Report, site: SiteDescription) -> [UInt8] {
        let room = r.room.flatMap { site.room($0) }
        let body = Body(
            ts: r.ts, beacon: r.beacon, room: r.room ?? notHome, room_name: room?.name, floor: room?.floor,
            since: r.since,
            confidence: r.confidence, method: r.method.rawValue,
            position: r.position.map { Position(x: $0.x, y: $0.y, floor: $0.floor, error_m: $0.error) },
            gateways: r.gateways.map {
                Heard(
                    gateway: $0.gateway, distance_m: ($0.distance * 100).rounded() / 100,
                    accuracy_m: $0.accuracy.map { ($0 * 100).rounded() / 100 },
                    rssi: $0.rssi.map { ($0 * 10).rounded() / 10 },
                    ts: $0.ts)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(body)) ?? Data())
    }
}

/// Home Assistant MQTT discovery for tracked tags (docs/HOMEASSISTANT.md, "Presence"): one `device_tracker` per tag,
/// its state the room (`not_home` when away), its position and confidence as attributes.
enum PresenceDiscovery {
    /// `blegateway_tag_<site>_<beacon>`: with the site, since the same beacon id in two sites (two fleet services on
    /// one broker, or one following two sites) is two tags, and their trackers shared one unique id.
    static func objectID(prefix: String, beacon: String) -> String {
        "blegateway_tag_" + String("\(prefix)_\(beacon)".map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    static func topic(discoveryPrefix: String, prefix: String, beacon: String) -> String {
        "\(discoveryPrefix)/device_tracker/\(objectID(prefix: prefix, beacon: beacon))/config"
    }

    /// Where earlier versions announced the tag (without its site): emptied when the tag is announced, so the tracker
    /// of the old unique id goes away instead of staying beside the new one.
    static func legacyTopic(discoveryPrefix: String, beacon: String) -> String {
        "\(discoveryPrefix)/device_tracker/blegateway_tag_"
            + String(beacon.map { $0.isLetter || $0.isNumber ? $0 : "_" }) + "/config"
    }

    /// `name`: the tag's name from the site (`tags[].name`), else "Tag <beacon id>".
    static func deviceName(_ beacon: String, _ name: String?) -> String {
        let given = name.map { PrintableText.line($0) } ?? ""
        return given.isEmpty ? "Tag \(beacon)" : given
    }

    static func document(prefix: String, beacon: String, status: String, name: String? = nil) -> [UInt8] {
        let attributes = FleetPresence.presenceTopic(prefix, beacon: beacon)
        let id = objectID(prefix: prefix, beacon: beacon)
        let doc: [String: Any] = [
            "unique_id": id,
            "object_id": id,
            // The entity is the device's only one: named after it (Home Assistant's naming rules since 2023.8).
            "name": NSNull(),
            // The room's own plain topic, not a template over the JSON: Home Assistant 2025.4 takes a location
            // name from the raw payload, not the rendered value_template (components/mqtt/device_tracker.py).
            "state_topic": FleetPresence.roomTopic(prefix, beacon: beacon),
            "payload_home": "home",
            "payload_not_home": PresencePayload.notHome,
            "json_attributes_topic": attributes,
            "json_attributes_template":
                "{{ {'room_name': value_json.room_name, 'floor': value_json.floor, 'confidence': value_json.confidence, "
                + "'method': value_json.method, 'x': (value_json.position or {}).x, 'y': (value_json.position or {}).y, "
                + "'error_m': (value_json.position or {}).error_m, 'since': value_json.since} | tojson }}",
            "source_type": "bluetooth_le",
            // The fleet service decides the room: when it stops (its last will), the tracker is unavailable instead of
            // leaving the person in their last room for ever.
            "availability": [
                [
                    "topic": status, "value_template": "{{ value_json.state }}", "payload_available": "online",
                    "payload_not_available": "offline",
                ]
            ],
            "device": [
                "identifiers": [id], "name": Self.deviceName(beacon, name), "manufacturer": "BLEGateway",
                "model": "tracked beacon",
            ],
            "origin": ["name": "blegateway fleet"],
        ]
        let data =
            (try? JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
        return Array(data)
    }
}
