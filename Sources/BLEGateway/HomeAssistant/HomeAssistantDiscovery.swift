import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEPublishing
import BLETransport

/// Home Assistant's MQTT discovery documents for one gateway, built from the configuration in force
/// (docs/HOMEASSISTANT.md). Pure: no I/O, no clock; `HomeAssistantAnnouncer` decides when each is published.
///
/// Device-based discovery (Home Assistant 2024.11+): one retained `<discovery_prefix>/device/<object_id>/config`
/// per device, its entities under `cmps`. Every entity has a stable `unique_id` made only of identifiers the
/// gateway formats itself (its id, hex addresses, UUIDs, region ids), `has_entity_name` naming (Home Assistant
/// puts the device name in front, so an entity name never repeats it), and, except the connectivity sensor that
/// reports it, availability bound to the gateway's retained status (online, or the broker's last will: offline).
///
/// A new kind of device is one more function returning `Device` (see docs/HOMEASSISTANT.md, "Adding devices").
struct HomeAssistantDiscovery: Sendable {
    let settings: GatewayConfiguration.HomeAssistant
    let topics: Topics
    let version: String

    /// One device's announcement: its discovery object id, its `dev` object and its entities.
    struct Device: Sendable, Equatable {
        var objectID: String
        /// The discovery node it goes under: the gateway's own (nil), or the sensors' shared one.
        var node: String? = nil
        var device: [UInt8]
        var components: [Component]
    }

    /// One entity: its key under `cmps` (also an object id), its platform and its options as a JSON object.
    struct Component: Sendable, Equatable {
        var id: String
        var platform: String
        var options: [UInt8]
    }

    /// Alert Level (GATT Specification Supplement §3.7), the one writable characteristic with a built-in control.
    static let alertLevel = BluetoothUUID(uuid16: 0x2A06)

    static let origin = "blegateway"
    static let originURL = "https://github.com/blegateway/blegateway"
    /// Names from configuration or the air are cut to this many characters: Home Assistant shows them in lists.
    static let maxNameLength = 64

    var gatewayDeviceID: String { Self.gatewayDeviceID(topics.gatewayID) }

    /// The gateway's device id (`HomeAssistantIDs.gatewayDevice`, shared with the fleet service).
    static func gatewayDeviceID(_ gatewayID: String) -> String { HomeAssistantIDs.gatewayDevice(gatewayID) }

    /// The device id earlier versions gave (lower case, anything but `[a-z0-9_-]` as `_`): documents they left
    /// retained under it are recognised as this gateway's and removed.
    static func legacyGatewayDeviceID(_ gatewayID: String) -> String { "blegateway_\(objectID(gatewayID))" }

    /// The discovery topics' node id: the gateway id itself, so that a broker's ACL can let each gateway write its
    /// own documents and no other's (`pattern write homeassistant/device/%u/#`). Home Assistant takes
    /// `[a-zA-Z0-9_-]` there; an id with a `.` is written as in `gatewayDeviceID`, and the ACL's pattern then does not
    /// match it (`blegateway config check` says so).
    var nodeID: String { Self.nodeID(topics.gatewayID) }

    static func nodeID(_ gatewayID: String) -> String {
        gatewayID.contains(".") ? String(gatewayDeviceID(gatewayID).dropFirst("blegateway_".count)) : gatewayID
    }

    /// `<discovery_prefix>/device/<node_id>/<object_id>/config`.
    func topic(for objectID: String) -> String { "\(settings.discoveryPrefix)/device/\(nodeID)/\(objectID)/config" }

    /// The topic of a device's document, under its node.
    func topic(for d: Device) -> String {
        "\(settings.discoveryPrefix)/device/\(d.node ?? nodeID)/\(d.objectID)/config"
    }

    /// A device a `name_prefix` or `service` entry took: known only once heard, by its address.
    struct Found: Sendable, Equatable {
        var address: BDAddress
        var intent: PeripheralIntent
    }

    /// Every device to announce for `c`, the gateway first, then the peripherals in configuration order, then the
    /// devices found for entries without an address (those whose entry is still configured), in the order found,
    /// then the broadcasting sensors heard, in the order heard.
    func devices(for c: GatewayConfiguration, found: [Found] = [], sensors: [HeardSensor] = []) -> [Device] {
        var out = [gatewayDevice(regions: c.regions, remoteConfig: c.remoteConfig.enabled)]
        for intent in c.peripherals {
            if let d = peripheralDevice(intent) { out.append(d) }
        }
        for f in found where c.peripherals.contains(f.intent) {
            if let d = peripheralDevice(f.intent, address: f.address) { out.append(d) }
        }
        if c.homeAssistant.sensors {
            for s in sensors { out.append(sensorDevice(s)) }
        }
        return out
    }

    /// The whole retained document for a device: `dev`, `o`, `cmps`, and `tombstones` — components announced
    /// before and gone now, each sent once with only its platform, which is how device-based discovery removes one.
    func document(_ d: Device, tombstones: [(id: String, platform: String)] = []) -> [UInt8] {
        var o = JSONObjectWriter()
        o.raw("dev", d.device)
        o.object("o") { j in
            j.string("name", Self.origin)
            j.string("sw", version)
            j.string("url", Self.originURL)
        }
        o.object("cmps") { j in
            for c in d.components { j.raw(c.id, c.options) }
            for t in tombstones { j.object(t.id) { $0.string("p", t.platform) } }
        }
        o.int("qos", 1)
        return o.finished
    }

    // MARK: - The gateway

    func gatewayDevice(regions: [Region], remoteConfig: Bool) -> Device {
        var dev = JSONObjectWriter()
        dev.strings("identifiers", [gatewayDeviceID])
        dev.string("name", Self.displayName(topics.gatewayID) ?? "gateway")
        dev.string("manufacturer", "BLEGateway")
        dev.string("model", "Bluetooth LE to MQTT gateway")
        dev.string("sw_version", version)
        let id = gatewayDeviceID
        var cmps: [Component] = []
        cmps.append(
            entity("connectivity", "binary_sensor", "\(id)_connectivity", "Connectivity", available: false) {
                $0.string("device_class", "connectivity")
                $0.string("entity_category", "diagnostic")
                $0.string("state_topic", topics.status)
                $0.string("value_template", "{{ value_json.state }}")
                $0.string("payload_on", "online")
                $0.string("payload_off", "offline")
            })
        // A plain text sensor, not an enum: adapter states are an open set (AdapterReport.State), and Home Assistant
        // refuses an enum value outside its options.
        cmps.append(
            entity("adapter", "sensor", "\(id)_adapter", "Adapter") {
                $0.string("entity_category", "diagnostic")
                $0.string("state_topic", topics.adapter)
                $0.string("value_template", "{{ value_json.state }}")
                $0.string("json_attributes_topic", topics.adapter)
                $0.string(
                    "json_attributes_template",
                    "{{ {'reason': value_json.get('reason'), 'device': value_json.get('device'), "
                        + "'scanning': value_json.get('scanning')} | tojson }}")
            })
        let health: [(String, String, String, String?, String?, String?)] = [
            // key, name, value, unit, device class, state class
            ("spool_depth", "Spool depth", "value_json.spool.depth", "readings", nil, "measurement"),
            ("messages_per_s", "Messages per second", "value_json.publish.rate_per_s", "msg/s", nil, "measurement"),
            (
                "dropped_samples", "Dropped samples", "value_json.spool.dropped_samples", "samples", nil,
                "total_increasing"
            ),
            ("uptime", "Uptime", "value_json.uptime_s", "s", "duration", "measurement"),
        ]
        for (key, name, value, unit, deviceClass, stateClass) in health {
            cmps.append(
                entity(key, "sensor", "\(id)_\(key)", name) {
                    if let deviceClass { $0.string("device_class", deviceClass) }
                    if let stateClass { $0.string("state_class", stateClass) }
                    if let unit { $0.string("unit_of_measurement", unit) }
                    $0.string("entity_category", "diagnostic")
                    $0.string("state_topic", topics.health)
                    $0.string("value_template", "{{ \(value) }}")
                })
        }
        cmps.append(
            entity("version", "sensor", "\(id)_version", "Version") {
                $0.string("entity_category", "diagnostic")
                $0.string("state_topic", topics.status)
                $0.string("value_template", "{{ value_json.version }}")
            })
        if remoteConfig {
            cmps.append(
                entity("config", "sensor", "\(id)_config", "Configuration") {
                    $0.string("device_class", "enum")
                    $0.strings("options", ["applied", "rejected"])
                    $0.string("entity_category", "diagnostic")
                    $0.string("state_topic", topics.configState)
                    $0.string("value_template", "{{ value_json.status }}")
                    $0.string("json_attributes_topic", topics.configState)
                    $0.string(
                        "json_attributes_template",
                        "{{ {'hash': value_json.get('hash'), 'errors': value_json.get('errors')} | tojson }}")
                })
        }
        for r in regions {
            let key = "region_\(Self.objectID(r.id))"
            cmps.append(
                entity(key, "binary_sensor", "\(id)_\(key)", Self.displayName(r.id) ?? "Region") {
                    $0.string("device_class", "presence")
                    $0.string("state_topic", topics.region(r.id))
                    // unknown (at start, after an adapter recovery) and removed are neither: Home Assistant's "None".
                    $0.string(
                        "value_template", "{{ {'inside': 'ON', 'outside': 'OFF'}.get(value_json.state, 'None') }}")
                    $0.string("json_attributes_topic", topics.region(r.id))
                    $0.string(
                        "json_attributes_template",
                        "{{ {'event': value_json.get('event'), 'beacons': value_json.get('beacons')} | tojson }}")
                })
        }
        return Device(objectID: id, device: dev.finished, components: cmps)
    }

    // MARK: - Peripherals

    /// A configured peripheral: a device of its own, `via_device` this gateway. An entry with an address is announced
    /// from the start; one that matches by name or service once a device is found (`found`: its address), named
    /// by the entry's name and the address, since one entry may take several devices.
    func peripheralDevice(_ intent: PeripheralIntent, address found: BDAddress? = nil) -> Device? {
        let address: BDAddress
        let name: String
        switch (intent.match, found) {
        case (.address(let a), _):
            address = a
            name = intent.name.flatMap(Self.displayName) ?? "BLE \(a.description)"
        case (_, let a?):
            address = a
            name = Self.displayName("\(intent.name ?? "BLE") \(a.description)") ?? "BLE \(a.description)"
        default:
            return nil
        }
        let hex = address.description.lowercased().replacingOccurrences(of: ":", with: "")
        let id = "\(gatewayDeviceID)_\(hex)"
        var dev = JSONObjectWriter()
        dev.strings("identifiers", [id])
        dev.raw("connections", Array(#"[["bluetooth","\#(address.description)"]]"#.utf8))
        dev.string("name", name)
        dev.string("via_device", gatewayDeviceID)
        var cmps: [Component] = []
        cmps.append(
            entity("link", "sensor", "\(id)_link", "Link") {
                $0.string("device_class", "enum")
                $0.strings("options", Self.linkStates)
                $0.string("state_topic", topics.peripheralState(hex))
                $0.string("value_template", "{{ value_json.state }}")
                $0.string("json_attributes_topic", topics.peripheralState(hex))
                $0.string(
                    "json_attributes_template",
                    "{{ {'reason': value_json.get('reason'), 'attempts': value_json.get('attempts')} | tojson }}")
            })
        cmps.append(
            entity("rssi", "sensor", "\(id)_rssi", "RSSI") {
                $0.string("device_class", "signal_strength")
                $0.string("state_class", "measurement")
                $0.string("unit_of_measurement", "dBm")
                $0.string("entity_category", "diagnostic")
                $0.string("state_topic", topics.peripheralRSSI(hex))
                $0.string("value_template", "{{ value_json.rssi }}")
            })
        // One sensor per characteristic the gateway receives (subscribed or read), each once.
        var seen: Set<BluetoothUUID> = []
        for ref in intent.subscribe.map(\.characteristic) + intent.read.map(\.characteristic)
        where seen.insert(ref.characteristic).inserted {
            cmps.append(characteristicSensor(ref.characteristic, deviceID: id, address: hex))
        }
        var written: Set<BluetoothUUID> = []
        for ref in intent.writable where written.insert(ref.characteristic).inserted {
            if let c = control(for: ref, deviceID: id, address: hex) { cmps.append(c) }
        }
        return Device(objectID: id, device: dev.finished, components: cmps)
    }

    /// Every state `…/peripherals/<address>/state` carries (schema/v1/peripheral-state.json): Home Assistant refuses an
    /// enum value outside the options, so `standby` (another gateway owns the peripheral) must be one.
    static let linkStates = ["disconnected", "connecting", "connected", "disconnecting", "standby"]

    /// How a characteristic's decoded value appears (GATTValueDecoding names the JSON keys).
    struct CharacteristicKind {
        var name: String
        var key: String
        var deviceClass: String?
        var unit: String?
        var stateClass: String?
        var diagnostic = false
    }

    static let characteristicKinds: [UInt16: CharacteristicKind] = [
        0x2A19: .init(
            name: "Battery", key: "battery_pct", deviceClass: "battery", unit: "%", stateClass: "measurement",
            diagnostic: true),
        0x2A6E: .init(
            name: "Temperature", key: "temperature_c", deviceClass: "temperature", unit: "°C",
            stateClass: "measurement"),
        0x2A6F: .init(
            name: "Humidity", key: "humidity_pct", deviceClass: "humidity", unit: "%",
            stateClass: "measurement"),
        0x2A1C: .init(
            name: "Thermometer", key: "temperature_c", deviceClass: "temperature", unit: "°C",
            stateClass: "measurement"),
        0x2A37: .init(name: "Heart rate", key: "heart_rate_bpm", unit: "bpm", stateClass: "measurement"),
        0x2A00: .init(name: "Device name", key: "device_name", diagnostic: true),
        0x2A24: .init(name: "Model number", key: "model_number", diagnostic: true),
        0x2A25: .init(name: "Serial number", key: "serial_number", diagnostic: true),
        0x2A26: .init(name: "Firmware revision", key: "firmware_revision", diagnostic: true),
        0x2A27: .init(name: "Hardware revision", key: "hardware_revision", diagnostic: true),
        0x2A28: .init(name: "Software revision", key: "software_revision", diagnostic: true),
        0x2A29: .init(name: "Manufacturer name", key: "manufacturer_name", diagnostic: true),
    ]

    func characteristicSensor(_ uuid: BluetoothUUID, deviceID: String, address: String) -> Component {
        let short = uuid.shortDescription
        let key = "char_\(Self.objectID(short))"
        let topic = topics.peripheralCharacteristic(address, short)
        guard let kind = uuid.uuid16.flatMap({ Self.characteristicKinds[$0] }) else {
            // Not decoded by the gateway: the raw bytes, for whoever knows the format; off until someone wants it.
            return entity(key, "sensor", "\(deviceID)_\(key)", "Characteristic \(short)") {
                $0.string("entity_category", "diagnostic")
                $0.bool("enabled_by_default", false)
                $0.string("state_topic", topic)
                $0.string("value_template", "{{ value_json.hex }}")
            }
        }
        return entity(key, "sensor", "\(deviceID)_\(key)", kind.name) {
            if let d = kind.deviceClass { $0.string("device_class", d) }
            if let s = kind.stateClass { $0.string("state_class", s) }
            if let u = kind.unit { $0.string("unit_of_measurement", u) }
            if kind.diagnostic { $0.string("entity_category", "diagnostic") }
            $0.string("state_topic", topic)
            // A value the gateway could not decode has no `value`: Home Assistant's "None" (unknown), not an error.
            $0.string("value_template", "{{ value_json.get('value', {}).get('\(kind.key)') }}")
        }
    }

    // MARK: - Writable characteristics

    /// The control configured for a writable characteristic, or the built-in one for a characteristic whose format
    /// is known (Alert Level: 0 no alert, 1 mild, 2 high; GATT Specification Supplement §3.7).
    func controlSettings(for ref: PeripheralIntent.CharacteristicRef) -> GatewayConfiguration.HomeAssistant.Control? {
        if let c = settings.controls.first(where: {
            $0.characteristic == ref.characteristic
                && ($0.service == nil || ref.service == nil || $0.service == ref.service)
        }) {
            return c
        }
        if ref.characteristic == Self.alertLevel {
            var c = GatewayConfiguration.HomeAssistant.Control(
                characteristic: ref.characteristic, service: ref.service,
                kind: .number)
            c.min = 0
            c.max = 2
            return c
        }
        return nil
    }

    func control(for ref: PeripheralIntent.CharacteristicRef, deviceID: String, address: String) -> Component? {
        guard let c = controlSettings(for: ref) else { return nil }
        let short = ref.characteristic.shortDescription
        let key = "write_\(Self.objectID(short))"
        let topic = topics.peripheralWrite(address)
        /// The write command (docs/TOPICS.md) with `value` given as JSON text: a hex string or a template.
        func command(_ value: String) -> String {
            var o = JSONObjectWriter()
            o.string("characteristic", short)
            if let s = ref.service ?? c.service { o.string("service", s.shortDescription) }
            o.string("value", value)
            o.string("id", "homeassistant-\(key)")
            return String(decoding: o.finished, as: UTF8.self)
        }
        let name =
            Self.characteristicKinds[ref.characteristic.uuid16 ?? 0]?.name
            ?? (ref.characteristic == Self.alertLevel ? "Alert level" : "Write \(short)")
        switch c.kind {
        case .button:
            return entity(key, "button", "\(deviceID)_\(key)", name) {
                $0.string("command_topic", topic)
                $0.string("payload_press", command(ConfigDigest.hex(c.press)))
            }
        case .switch:
            return entity(key, "switch", "\(deviceID)_\(key)", name) {
                $0.string("command_topic", topic)
                $0.string("payload_on", command(ConfigDigest.hex(c.on)))
                $0.string("payload_off", command(ConfigDigest.hex(c.off)))
                $0.bool("optimistic", true)
            }
        case .number:
            // One unsigned byte, or two little-endian above 255 (the SIG's uint16).
            let hex =
                c.max > 255
                ? "{{ '%02x%02x' % ((value | int) % 256, (value | int) // 256) }}"
                : "{{ '%02x' % (value | int) }}"
            return entity(key, "number", "\(deviceID)_\(key)", name) {
                $0.string("command_topic", topic)
                $0.string("command_template", command(hex))
                $0.int("min", c.min)
                $0.int("max", c.max)
                $0.int("step", 1)
                $0.string("mode", "box")
                $0.bool("optimistic", true)
            }
        }
    }

    // MARK: - Pieces

    /// One entity's options: platform, unique_id, name, availability (unless `available` is false), then `fields`.
    func entity(
        _ key: String, _ platform: String, _ uniqueID: String, _ name: String, available: Bool = true,
        _ fields: (inout JSONObjectWriter) -> Void
    ) -> Component {
        var o = JSONObjectWriter()
        o.string("p", platform)
        o.string("unique_id", uniqueID)
        o.string("object_id", uniqueID)
        o.string("name", name)
        if available {
            o.raw("availability", availability)
        }
        fields(&o)
        return Component(id: key, platform: platform, options: o.finished)
    }

    /// Bound to the retained status: online while the gateway is, offline on shutdown and by the last will.
    var availability: [UInt8] {
        var a = JSONObjectWriter()
        a.string("topic", topics.status)
        a.string("value_template", "{{ value_json.state }}")
        a.string("payload_available", "online")
        a.string("payload_not_available", "offline")
        return [UInt8(ascii: "[")] + a.finished + [UInt8(ascii: "]")]
    }

    /// An object id (discovery topic level, `cmps` key): `[a-z0-9_-]`, anything else as `_`.
    static func objectID(_ s: String) -> String {
        String(
            decoding: s.lowercased().utf8.map { b in
                b.isASCIIAlphanumeric || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") ? b : UInt8(ascii: "_")
            }, as: UTF8.self)
    }

    /// A name fit to show: control characters dropped, white space collapsed, at most `maxNameLength` characters;
    /// nil when nothing is left. It goes only into JSON strings (escaped there), never into a topic.
    static func displayName(_ s: String) -> String? {
        let out = PrintableText.line(s)
        guard !out.isEmpty else { return nil }
        return out.count > maxNameLength ? String(out.prefix(maxNameLength)) : out
    }
}
