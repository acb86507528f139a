import BLETransport

/// The MQTT topic schema (docs/TOPICS.md). Topics are built only from identifiers the gateway
/// formats itself — its own validated gateway id and prefix, addresses as hex, beacon ids made of
/// `[a-z0-9-]`, UUIDs as hex — so `+`, `#`, `/`, NUL or invalid UTF-8 from the air can never shape
/// a topic. Device-provided strings (names, URLs) go only into payloads.
public struct Topics: Sendable, Hashable {
    public let prefix: String
    public let gatewayID: String

    /// Why a prefix or gateway id was refused.
    public struct InvalidIdentifier: Error, CustomStringConvertible, Sendable {
        public let field: String
        public let value: String
        public let reason: String
        public var description: String { "invalid \(field) \"\(value)\": \(reason)" }
    }

    /// - Parameters:
    ///   - prefix: one or more `/`-separated levels of `[A-Za-z0-9._-]`, e.g. `blegateway` or `site-1/ble`.
    ///   - gatewayID: one level of `[A-Za-z0-9._-]`, at most 64 characters.
    public init(prefix: String, gatewayID: String) throws {
        for level in prefix.split(separator: "/", omittingEmptySubsequences: false) {
            if let why = Self.problem(with: level) {
                throw InvalidIdentifier(field: "topic prefix", value: prefix, reason: why)
            }
        }
        if let why = Self.problem(with: Substring(gatewayID)) {
            throw InvalidIdentifier(field: "gateway id", value: gatewayID, reason: why)
        }
        if gatewayID == "fleet" {
            throw InvalidIdentifier(
                field: "gateway id", value: gatewayID, reason: "\"fleet\" is reserved for fleet-wide config")
        }
        self.prefix = prefix
        self.gatewayID = gatewayID
    }

    static func problem(with level: Substring) -> String? { TopicLevel.problem(level) }

    /// `<prefix>/<gateway>`: every topic the gateway publishes under its prefix begins with it.
    public var base: String { "\(prefix)/\(gatewayID)" }

    /// Every gateway's retained status under the prefix (peripheral ownership follows which are online).
    public var allStatuses: String { "\(prefix)/+/status" }
    /// The claim on one peripheral: the one gateway of the fleet that connects it (docs/PERIPHERALS.md).
    public func peripheralOwner(_ address: String) -> String { "\(prefix)/fleet/peripherals/\(address)/owner" }
    /// Every peripheral's claim.
    public var peripheralOwners: String { "\(prefix)/fleet/peripherals/+/owner" }

    /// Retained online/offline; the last will sets offline.
    public var status: String { "\(base)/status" }
    /// Retained adapter state.
    public var adapter: String { "\(base)/adapter" }
    /// With two adapters: each one's retained state; `slot` is `primary` or `secondary`.
    public func adapterSlot(_ slot: String) -> String { "\(base)/adapters/\(slot)" }
    /// Periodic health.
    public var health: String { "\(base)/health" }
    /// Ranging for one beacon; `beaconID` comes from `BeaconIdentity` (`[a-z0-9-]`).
    public func beacon(_ beaconID: String) -> String { "\(base)/beacons/\(beaconID)" }
    /// Retained region state.
    public func region(_ regionID: String) -> String { "\(base)/regions/\(regionID)" }
    /// Retained peripheral connection state; `address` is 12 lowercase hex digits.
    public func peripheralState(_ address: String) -> String { "\(base)/peripherals/\(address)/state" }
    public func peripheralRSSI(_ address: String) -> String { "\(base)/peripherals/\(address)/rssi" }
    /// `<prefix>/<gateway>/peripherals/`, for filters over every peripheral.
    public var peripheralStatePrefix: String { "\(base)/peripherals/" }
    /// Retained GATT database of a peripheral (services, characteristics, descriptors).
    public func peripheralGATT(_ address: String) -> String { "\(base)/peripherals/\(address)/gatt" }
    /// Values of one characteristic (notifications, indications, reads); `uuid` as `BluetoothUUID.shortDescription`.
    public func peripheralCharacteristic(_ address: String, _ uuid: String) -> String {
        "\(base)/peripherals/\(address)/char/\(uuid)"
    }
    /// Write commands for a peripheral (operators publish here, not retained); the gateway subscribes.
    public func peripheralWrite(_ address: String) -> String { "\(base)/peripherals/\(address)/write" }
    /// The filter the gateway subscribes to for every peripheral's write commands.
    public var peripheralWrites: String { "\(base)/peripherals/+/write" }
    /// One result per write command: success, or the ATT error by name.
    public func peripheralWriteResult(_ address: String) -> String { "\(base)/peripherals/\(address)/write/result" }
    /// Enrolment commands (operators publish here, not retained): pair a phone through the running gateway.
    public var enrol: String { "\(base)/enrol" }
    /// Each step and the outcome of an enrolment (not retained).
    public var enrolState: String { "\(base)/enrol/state" }
    /// Decoded sensor readings (docs/SENSORS.md); `address` is 12 lowercase hex digits.
    public func sensor(_ address: String) -> String { "\(base)/sensors/\(address)" }
    /// Rate-limited raw advertisement stream (optional).
    public func raw(_ address: String) -> String { "\(base)/raw/\(address)" }
    /// Per-gateway desired config (retained, written by operators).
    public var config: String { "\(base)/config" }
    /// Reported config state (retained).
    public var configState: String { "\(base)/config/state" }
    /// The gateway's start-up barrier (not retained, written and read by the gateway alone): a message sent here
    /// after subscribing to the config topics comes back after any retained document the broker had for them.
    public var configSync: String { "\(base)/config/sync" }
    /// Fleet-wide desired config (retained, written by operators).
    public var fleetConfig: String { "\(prefix)/fleet/config" }
}
