import BLEPublishing
import BLETransport
import Foundation

/// The gateways' areas in Home Assistant, from the site: each gateway's device gets its room's name as its suggested
/// area, so a house's gateways land in their rooms without a click each.
///
/// The gateway announces its own device; it does not read the site. The fleet service, which does, adds a document
/// of its own for the same device (the same identifier: Home Assistant merges what documents say about one device)
/// with `suggested_area` and one diagnostic entity, the gateway's room, available while the fleet service is.
/// Home Assistant sets a suggested area only on a device that has none, so a person's choice of area stands.
enum GatewayAreaDiscovery {
    /// The gateway's device identifier, as the gateway announces its device under.
    static func deviceID(_ gateway: String) -> String { HomeAssistantIDs.gatewayDevice(gateway) }

    static func objectID(_ prefix: String, gateway: String) -> String {
        "blegateway_gwroom_" + String((prefix + "_" + gateway).map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    static func topic(discoveryPrefix: String, prefix: String, gateway: String) -> String {
        "\(discoveryPrefix)/device/\(RoomOccupancy.discoveryNode)/\(objectID(prefix, gateway: gateway))/config"
    }

    /// The room's name as a Jinja string literal: the template renders it whatever the name holds.
    static func literal(_ text: String) -> String {
        var out = "'"
        for c in text.unicodeScalars {
            switch c {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "'"
    }

    /// `status`: the fleet service's status topic (the entity's availability, and the topic its constant state is
    /// rendered on).
    static func document(prefix: String, gateway: String, room: SiteDescription.Room, status: String) -> [UInt8] {
        let id = objectID(prefix, gateway: gateway)
        let name = PrintableText.line(room.name).isEmpty ? room.id : PrintableText.line(room.name)
        var o = JSONObjectWriter()
        o.object("dev") { d in
            d.strings("identifiers", [deviceID(gateway)])
            d.string("suggested_area", name)
        }
        o.object("o") { $0.string("name", "blegateway fleet") }
        o.object("cmps") { c in
            c.object("room") { e in
                e.string("p", "sensor")
                e.string("unique_id", "\(id)_room")
                e.string("object_id", "\(id)_room")
                e.string("name", "Room")
                e.string("entity_category", "diagnostic")
                e.string("state_topic", status)
                e.string("value_template", "{{ \(literal(name)) }}")
                e.string("availability_topic", status)
                e.string("availability_template", "{{ value_json.state }}")
                e.string("payload_available", "online")
                e.string("payload_not_available", "offline")
            }
        }
        o.int("qos", 1)
        return o.finished
    }
}
