import BLETransport
import Foundation

/// Who is in which room of a site, from the tags' reports: per room, whether anyone is there and how many tags. A
/// pure fold (reports in, the rooms whose occupancy changed out); the fleet service publishes what it returns,
/// retained on `<prefix>/fleet/rooms/<room-id>`, and announces each room to Home Assistant as a device with an
/// occupancy binary sensor and a count sensor, so a room's lights can follow whether anyone is in it.
struct RoomOccupancy: Sendable, Equatable {
    /// Each tag's room now (absent: away, or not heard since start).
    private(set) var roomOf: [String: String] = [:]
    /// The rooms of the site in force, in its order.
    private(set) var rooms: [String] = []

    /// One room's occupancy as published.
    struct Room: Sendable, Equatable {
        var id: String
        var tags: [String]
        var occupied: Bool { !tags.isEmpty }
    }

    /// The site's rooms changed (a description pushed or configured): every room of it, with who is there, to publish;
    /// and the rooms that are gone, whose topics and documents are removed.
    mutating func site(_ site: SiteDescription) -> (rooms: [Room], removed: [String]) {
        let ids = site.rooms.map(\.id)
        let removed = rooms.filter { !ids.contains($0) }
        rooms = ids
        roomOf = roomOf.filter { ids.contains($0.value) && site.countsAsPerson($0.key) }
        return (ids.map(occupancy(of:)), removed)
    }

    /// A tag's report: the rooms whose occupancy it changed (the one left, the one entered).
    mutating func report(beacon: String, room: String?) -> [Room] {
        let before = roomOf[beacon]
        let now = room.flatMap { rooms.contains($0) ? $0 : nil }
        guard before != now else { return [] }
        roomOf[beacon] = now
        return [before, now].compactMap { $0 }.map(occupancy(of:))
    }

    func occupancy(of id: String) -> Room {
        Room(id: id, tags: roomOf.filter { $0.value == id }.map(\.key).sorted())
    }

    static func topic(_ prefix: String, room: String) -> String { "\(prefix)/fleet/rooms/\(room)" }

    /// `{"occupied":true,"count":2,"tags":["…","…"]}`.
    static func payload(_ r: Room) -> [UInt8] {
        var o = JSONObjectWriter()
        o.bool("occupied", r.occupied)
        o.int("count", r.tags.count)
        o.strings("tags", r.tags)
        return o.finished
    }

    /// The node the fleet service announces rooms under (the broker's ACL lets its user write it).
    static let discoveryNode = "blegateway-fleet"

    static func objectID(_ prefix: String, room: String) -> String {
        "blegateway_room_" + String((prefix + "_" + room).map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    static func discoveryTopic(discoveryPrefix: String, prefix: String, room: String) -> String {
        "\(discoveryPrefix)/device/\(discoveryNode)/\(objectID(prefix, room: room))/config"
    }

    /// A room as a Home Assistant device: Occupancy (binary sensor, class occupancy) and People (the tags in it),
    /// available while the fleet service says online on `status` (the service's own status topic, under its first
    /// prefix, whichever site the room is of: the service has one last will); its area suggested from the room's name.
    static func document(prefix: String, room: SiteDescription.Room, status: String) -> [UInt8] {
        let id = objectID(prefix, room: room.id)
        let state = topic(prefix, room: room.id)
        let name = PrintableText.line(room.name).isEmpty ? room.id : PrintableText.line(room.name)
        var availability = JSONObjectWriter()
        availability.string("topic", status)
        availability.string("value_template", "{{ value_json.state }}")
        availability.string("payload_available", "online")
        availability.string("payload_not_available", "offline")
        let available = Array("[".utf8) + availability.finished + Array("]".utf8)
        var o = JSONObjectWriter()
        o.object("dev") { d in
            d.strings("identifiers", [id])
            d.string("name", name)
            d.string("manufacturer", "BLEGateway")
            d.string("model", "room")
            d.string("suggested_area", name)
        }
        o.object("o") { $0.string("name", "blegateway fleet") }
        o.object("cmps") { c in
            c.object("occupancy") { e in
                e.string("p", "binary_sensor")
                e.string("unique_id", "\(id)_occupancy")
                e.string("object_id", "\(id)_occupancy")
                e.string("name", "Occupancy")
                e.string("device_class", "occupancy")
                e.string("state_topic", state)
                e.string("value_template", "{{ 'ON' if value_json.occupied else 'OFF' }}")
                e.raw("availability", available)
            }
            c.object("count") { e in
                e.string("p", "sensor")
                e.string("unique_id", "\(id)_count")
                e.string("object_id", "\(id)_count")
                e.string("name", "Tags present")
                e.string("state_class", "measurement")
                e.string("state_topic", state)
                e.string("value_template", "{{ value_json.count }}")
                e.string("json_attributes_topic", state)
                e.string("json_attributes_template", "{{ {'tags': value_json.tags} | tojson }}")
                e.raw("availability", available)
            }
        }
        o.int("qos", 1)
        return o.finished
    }
}
