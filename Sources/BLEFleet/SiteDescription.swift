import Foundation

/// Where the gateways are (docs/PRESENCE.md): floors, rooms as polygons, and each gateway's position and room. Read
/// from the fleet service's configuration (`fleet.site`) or pushed retained on `<prefix>/fleet/site`, as YAML or
/// JSON:
///
/// ```yaml
/// floors:
///   - {id: ground, z: 0}                       # z: the floor's height above the site's origin, metres
/// rooms:
///   - {id: lobby, name: Lobby, floor: ground, polygon: [[0, 0], [8, 0], [8, 9], [0, 9]]}
/// gateways:
///   - {id: gw-lobby, position: [4, 4, 2.5], room: lobby}   # x, y, z in metres; or only `room` (no position)
/// presence: {dwell_s: 4, margin_m: 1.0, away_after_s: 60}
/// ```
/// Unknown keys are errors, named by path, as in every other configuration.
public struct SiteDescription: Sendable, Equatable {
    public struct Floor: Sendable, Equatable {
        public var id: String
        public var name: String
        /// Height of the floor above the site's origin, in metres.
        public var z: Double
    }

    public struct Room: Sendable, Equatable {
        public var id: String
        public var name: String
        public var floor: String
        public var polygon: [Point]
    }

    public struct Gateway: Sendable, Equatable {
        public var id: String
        /// Nil when only the room is known: presence by nearest gateway for beacons it hears.
        public var position: Vec3?
        public var room: String
    }

    public struct Point: Sendable, Equatable {
        public var x: Double
        public var y: Double
        public init(_ x: Double, _ y: Double) {
            self.x = x
            self.y = y
        }
    }

    public struct Vec3: Sendable, Equatable {
        public var x: Double
        public var y: Double
        public var z: Double
        public init(_ x: Double, _ y: Double, _ z: Double) {
            self.x = x
            self.y = y
            self.z = z
        }
    }

    public var floors: [Floor]
    public var rooms: [Room]
    public var gateways: [String: Gateway]
    public var presence: PresenceSettings
    /// Each tag's own settings, by beacon id (`tags:`): names, people, calibration, timing, gateways to ignore.
    public var tags: [String: TagSettings] = [:]

    /// The presence settings for `beacon`: the site's, with the tag's own in place.
    public func presence(for beacon: String) -> PresenceSettings {
        tags[beacon].map { $0.applied(to: presence) } ?? presence
    }

    /// The tags named people (`person: true`); empty when the site names none, and then every tag counts.
    public var people: Set<String> { Set(tags.values.filter(\.person).map(\.beacon)) }

    /// Whether a tag in a room counts as someone there (RoomOccupancy).
    public func countsAsPerson(_ beacon: String) -> Bool {
        let people = self.people
        return people.isEmpty || people.contains(beacon)
    }

    public struct Problem: Error, CustomStringConvertible, Equatable {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    public init(floors: [Floor], rooms: [Room], gateways: [Gateway], presence: PresenceSettings = PresenceSettings()) {
        self.floors = floors
        self.rooms = rooms
        self.gateways = Dictionary(gateways.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.presence = presence
    }

    public func room(_ id: String) -> Room? { rooms.first { $0.id == id } }
    public func floor(_ id: String) -> Floor? { floors.first { $0.id == id } }
    public func floor(ofRoom id: String) -> Floor? { room(id).flatMap { floor($0.floor) } }

    /// Parses a document (YAML, or JSON, which YAML contains).
    public init(text: String, path: String = "site") throws {
        let root: Any?
        do {
            root = try YAMLTree.load(text, path: path)
        } catch let f as YAMLTree.Failure {
            throw Problem(path: f.path, reason: f.reason)
        }
        try self.init(node: root as Any, path: path)
    }

    /// Parses an already loaded mapping (the `fleet.site` section of a configuration file).
    public init(node: Any, path: String) throws {
        let m = try Self.mapping(node, path, keys: ["floors", "rooms", "gateways", "presence", "tags"])
        var floors: [Floor] = []
        for (i, f) in try Self.list(m["floors"] ?? [Any](), "\(path).floors").enumerated() {
            let p = "\(path).floors[\(i)]"
            let fm = try Self.mapping(f, p, keys: ["id", "name", "z"])
            let id = try Self.id(fm["id"], "\(p).id")
            floors.append(
                Floor(
                    id: id, name: try Self.string(fm["name"], "\(p).name") ?? id,
                    z: try Self.number(fm["z"], "\(p).z") ?? 0))
        }
        if floors.isEmpty { floors = [Floor(id: "ground", name: "ground", z: 0)] }
        try Self.unique(floors.map(\.id), "\(path).floors", "floor")

        var rooms: [Room] = []
        for (i, r) in try Self.list(m["rooms"], "\(path).rooms").enumerated() {
            let p = "\(path).rooms[\(i)]"
            let rm = try Self.mapping(r, p, keys: ["id", "name", "floor", "polygon"])
            let id = try Self.id(rm["id"], "\(p).id")
            let floor = try Self.string(rm["floor"], "\(p).floor") ?? floors[0].id
            guard floors.contains(where: { $0.id == floor }) else {
                throw Problem(path: "\(p).floor", reason: "no floor \"\(floor)\" in floors")
            }
            var polygon: [Point] = []
            for (j, v) in try Self.list(rm["polygon"], "\(p).polygon").enumerated() {
                let c = try Self.coordinates(v, "\(p).polygon[\(j)]", count: 2)
                polygon.append(Point(c[0], c[1]))
            }
            guard polygon.count >= 3 else {
                throw Problem(path: "\(p).polygon", reason: "a room needs at least 3 corners")
            }
            guard abs(Geometry.area(polygon)) > 1e-6 else {
                throw Problem(path: "\(p).polygon", reason: "the corners enclose no area")
            }
            rooms.append(
                Room(id: id, name: try Self.string(rm["name"], "\(p).name") ?? id, floor: floor, polygon: polygon))
        }
        guard !rooms.isEmpty else { throw Problem(path: "\(path).rooms", reason: "give at least one room") }
        try Self.unique(rooms.map(\.id), "\(path).rooms", "room")

        var gateways: [Gateway] = []
        for (i, g) in try Self.list(m["gateways"] ?? [Any](), "\(path).gateways").enumerated() {
            let p = "\(path).gateways[\(i)]"
            let gm = try Self.mapping(g, p, keys: ["id", "position", "room"])
            let id = try Self.id(gm["id"], "\(p).id")
            guard let room = try Self.string(gm["room"], "\(p).room") else {
                throw Problem(path: "\(p).room", reason: "missing: every gateway is in a room")
            }
            guard rooms.contains(where: { $0.id == room }) else {
                throw Problem(path: "\(p).room", reason: "no room \"\(room)\" in rooms")
            }
            let position = try gm["position"].map { v -> Vec3 in
                let c = try Self.coordinates(v, "\(p).position", count: 3)
                return Vec3(c[0], c[1], c[2])
            }
            gateways.append(Gateway(id: id, position: position, room: room))
        }
        try Self.unique(gateways.map(\.id), "\(path).gateways", "gateway")
        let presence = try PresenceSettings(node: m["presence"], path: "\(path).presence")
        self.init(floors: floors, rooms: rooms, gateways: gateways, presence: presence)
        tags = try TagSettings.parse(m["tags"], "\(path).tags", gateways: Set(gateways.map(\.id)))
    }

    // MARK: Reading helpers (each names the path it failed at)

    static func mapping(_ v: Any?, _ path: String, keys: Set<String>) throws -> [String: Any] {
        guard let m = v as? [String: Any] else { throw Problem(path: path, reason: "expected a mapping") }
        for k in m.keys.sorted() where !keys.contains(k) {
            throw Problem(
                path: "\(path).\(k)", reason: "unknown key; expected one of \(keys.sorted().joined(separator: ", "))")
        }
        return m
    }

    static func list(_ v: Any?, _ path: String) throws -> [Any] {
        guard let v else { throw Problem(path: path, reason: "missing") }
        guard let l = v as? [Any] else { throw Problem(path: path, reason: "expected a list") }
        return l
    }

    static func string(_ v: Any?, _ path: String) throws -> String? {
        guard let v else { return nil }
        guard let s = v as? String, !s.isEmpty else { throw Problem(path: path, reason: "expected a non-empty string") }
        return s
    }

    /// Ids become topic levels and page addresses: `[A-Za-z0-9._-]`, at most 64 characters.
    static func id(_ v: Any?, _ path: String) throws -> String {
        guard let s = try string(v, path) else { throw Problem(path: path, reason: "missing") }
        guard s.count <= 64, FleetTopic.isValidLevel(s) else {
            throw Problem(path: path, reason: "\"\(s)\": expected 1–64 characters of [A-Za-z0-9._-]")
        }
        return s
    }

    static func number(_ v: Any?, _ path: String) throws -> Double? {
        guard let v else { return nil }
        guard let d = (v as? Double) ?? (v as? Int).map(Double.init), d.isFinite else {
            throw Problem(path: path, reason: "expected a number")
        }
        return d
    }

    static func coordinates(_ v: Any, _ path: String, count: Int) throws -> [Double] {
        guard let l = v as? [Any], l.count == count else {
            throw Problem(path: path, reason: "expected [\(count == 2 ? "x, y" : "x, y, z")] in metres")
        }
        return try l.enumerated().map { i, c in
            guard let d = try number(c, "\(path)[\(i)]") else { throw Problem(path: path, reason: "expected numbers") }
            guard abs(d) <= 100_000 else {
                throw Problem(path: "\(path)[\(i)]", reason: "beyond 100 km from the origin")
            }
            return d
        }
    }

    static func unique(_ ids: [String], _ path: String, _ what: String) throws {
        var seen: Set<String> = []
        for id in ids where !seen.insert(id).inserted {
            throw Problem(path: path, reason: "\(what) \"\(id)\" is listed twice")
        }
    }
}

/// How presence is decided (`presence:` in a site description); the defaults suit an office.
public struct PresenceSettings: Sendable, Equatable {
    /// A room must lead for this long before a tag moves into it (no flapping at a doorway).
    public var dwellS = 3.0
    /// …or for this long when the tag is standing still (no fix outside the estimate's bounds for `still_after_s`).
    public var stillDwellS = 60.0
    public var stillAfterS = 20.0
    /// A tag that has stayed in one room this long has settled: its position is the quiet filter's, and another room
    /// must lead it for at least `settled_dwell_s` even while it seems to walk. A tag that changed room within it is
    /// followed without the quiet filter's lag (docs/PRESENCE.md, "Settled and unsettled tags").
    public var settleS = 120.0
    /// The least dwell of a settled tag: longer than the few seconds a fit strays across a wall near it.
    public var settledDwellS = 15.0
    /// …and lead by this much: metres inside it beyond the current room (position), or metres nearer its gateway.
    public var marginM = 1.0
    /// A fit further than this outside every room of its floor is implausible (the last good position is kept).
    public var outsideM = 1.0
    /// With no reading from any gateway for this long, the tag is `not_home`.
    public var awayAfterS = 60.0
    /// Readings whose own `ts` is this far behind the newest reading for the tag are left out of a fit (clock skew
    /// of a few seconds between gateways is within it).
    public var windowS = 6.0
    /// Where a tag is carried, above its floor, in metres (a fit is in x and y; z is taken as this).
    public var tagHeightM = 1.2
    /// How much a new fit moves the smoothed position: the speed a tag may walk at, in m/s.
    public var walkingSpeedMPS = 1.5
    /// Beacon ids to follow; empty follows every beacon a gateway ranges.
    public var beacons: [String] = []
    /// At most this many tags are followed; more are counted (`presence.refused`) and left out.
    public var maxTags = 10_000
    /// How fast the signal falls with distance, for tags with their own `rssi_at_1m` (the gateways' ranging default).
    public var pathLossExponent = 2.0

    public init() {}

    init(node: Any?, path: String) throws {
        guard let node else { return }
        let m = try SiteDescription.mapping(
            node, path,
            keys: [
                "dwell_s", "still_dwell_s", "still_after_s", "settle_s", "settled_dwell_s", "margin_m", "outside_m",
                "away_after_s", "window_s",
                "tag_height_m", "walking_speed_mps", "beacons", "max_tags", "path_loss_exponent",
            ])
        func positive(_ key: String, _ into: inout Double) throws {
            guard let d = try SiteDescription.number(m[key], "\(path).\(key)") else { return }
            guard d >= 0 else { throw SiteDescription.Problem(path: "\(path).\(key)", reason: "expected a number ≥ 0") }
            into = d
        }
        try positive("dwell_s", &dwellS)
        try positive("still_dwell_s", &stillDwellS)
        try positive("still_after_s", &stillAfterS)
        try positive("settle_s", &settleS)
        try positive("settled_dwell_s", &settledDwellS)
        try positive("margin_m", &marginM)
        try positive("outside_m", &outsideM)
        try positive("away_after_s", &awayAfterS)
        try positive("window_s", &windowS)
        try positive("tag_height_m", &tagHeightM)
        try positive("walking_speed_mps", &walkingSpeedMPS)
        if let n = try SiteDescription.number(m["path_loss_exponent"], "\(path).path_loss_exponent") {
            guard (1...6).contains(n) else {
                throw SiteDescription.Problem(
                    path: "\(path).path_loss_exponent", reason: "expected a number from 1 to 6")
            }
            pathLossExponent = n
        }
        if awayAfterS <= 0 {
            throw SiteDescription.Problem(path: "\(path).away_after_s", reason: "expected a number > 0")
        }
        if let v = m["beacons"] {
            guard let l = v as? [Any], l.allSatisfy({ $0 is String }) else {
                throw SiteDescription.Problem(path: "\(path).beacons", reason: "expected a list of beacon ids")
            }
            beacons = l.map { $0 as! String }
        }
        if let v = m["max_tags"] {
            guard let n = v as? Int, n > 0 else {
                throw SiteDescription.Problem(path: "\(path).max_tags", reason: "expected a positive whole number")
            }
            maxTags = n
        }
    }
}
