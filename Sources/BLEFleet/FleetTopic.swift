/// Where a message sits in the topic schema (docs/TOPICS.md, schema/v1/topics.json), parsed from its levels below
/// the prefix. Only the shapes the gateways publish are known; anything else is `.unknown` and counted.
public enum FleetTopic: Sendable, Equatable {
    case status(gateway: String)
    case adapter(gateway: String)
    case adapterSlot(gateway: String, slot: String)
    case health(gateway: String)
    case beacon(gateway: String, beacon: String)
    case raw(gateway: String)
    /// A decoded sensor advertisement (`…/sensors/<address>`): in the seq stream, not yet on the dashboard.
    case sensor(gateway: String, address: String)
    case region(gateway: String, region: String)
    case peripheralState(gateway: String, address: String)
    case peripheralRSSI(gateway: String, address: String)
    /// Peripheral topics the dashboard does not fold (gatt, char, write results): still part of the seq stream.
    case peripheralOther(gateway: String)
    case configState(gateway: String)
    /// Each step of an enrolment (`…/enrol/state`): in the seq stream, not on the dashboard.
    case enrolment(gateway: String)
    /// Written by operators or other fleet services, not by a gateway: `<prefix>/fleet/…`, `<prefix>/<gw>/config`,
    /// `…/peripherals/<address>/write`, `<prefix>/<gw>/enrol`; or the gateway's start-up barrier to itself
    /// (`<prefix>/<gw>/config/sync`). Not counted as bad, not part of any gateway's stream.
    case notFromAGateway
    /// A gateway id outside `[A-Za-z0-9._-]` (the gateway validates its own id at start, so such a topic was
    /// written by something else).
    case badGatewayID
    case unknown

    /// Parses `topic` under `prefix` (no trailing slash); nil when the topic is outside the prefix.
    public init?(_ topic: String, prefix: String) {
        guard topic.count > prefix.count + 1, topic.hasPrefix(prefix),
            topic[topic.index(topic.startIndex, offsetBy: prefix.count)] == "/"
        else { return nil }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        let gw = String(levels[0])
        if gw == "fleet" {
            self = .notFromAGateway
            return
        }
        guard Self.isValidLevel(gw) else {
            self = .badGatewayID
            return
        }
        let rest = levels.dropFirst().map(String.init)
        switch rest.count {
        case 1:
            switch rest[0] {
            case "status": self = .status(gateway: gw)
            case "adapter": self = .adapter(gateway: gw)
            case "health": self = .health(gateway: gw)
            case "config", "enrol": self = .notFromAGateway
            default: self = .unknown
            }
        case 2:
            switch rest[0] {
            case "adapters": self = .adapterSlot(gateway: gw, slot: rest[1])
            case "beacons" where Self.isBeaconID(rest[1]): self = .beacon(gateway: gw, beacon: rest[1])
            case "raw": self = .raw(gateway: gw)
            case "sensors" where Self.isAddress(rest[1]): self = .sensor(gateway: gw, address: rest[1])
            case "regions" where Self.isValidLevel(rest[1]): self = .region(gateway: gw, region: rest[1])
            case "config" where rest[1] == "state": self = .configState(gateway: gw)
            case "config" where rest[1] == "sync": self = .notFromAGateway
            case "enrol" where rest[1] == "state": self = .enrolment(gateway: gw)
            default: self = .unknown
            }
        default:
            guard rest[0] == "peripherals", Self.isAddress(rest[1]) else {
                self = .unknown
                return
            }
            switch rest.dropFirst(2).joined(separator: "/") {
            case "state": self = .peripheralState(gateway: gw, address: rest[1])
            case "rssi": self = .peripheralRSSI(gateway: gw, address: rest[1])
            case "write": self = .notFromAGateway
            case "gatt", "write/result": self = .peripheralOther(gateway: gw)
            case let tail where tail.hasPrefix("char/"): self = .peripheralOther(gateway: gw)
            default: self = .unknown
            }
        }
    }

    /// The gateway whose stream this message belongs to.
    public var gateway: String? {
        switch self {
        case .status(let g), .adapter(let g), .adapterSlot(let g, _), .health(let g), .beacon(let g, _), .raw(let g),
            .sensor(let g, _), .region(let g, _), .peripheralState(let g, _), .peripheralRSSI(let g, _),
            .peripheralOther(let g), .enrolment(let g),
            .configState(let g):
            return g
        case .notFromAGateway, .badGatewayID, .unknown:
            return nil
        }
    }

    /// Topic levels the gateway accepts for ids (docs/TOPICS.md): `[A-Za-z0-9._-]`, non-empty.
    static func isValidLevel(_ s: String) -> Bool {
        !s.isEmpty
            && s.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                    || c == 0x2E || c == 0x5F || c == 0x2D
            }
    }

    /// Beacon ids are `[a-z0-9-]`.
    static func isBeaconID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) || c == 0x2D }
    }

    /// Addresses in topics are 12 lowercase hex digits.
    static func isAddress(_ s: String) -> Bool {
        s.utf8.count == 12 && s.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) }
    }
}
