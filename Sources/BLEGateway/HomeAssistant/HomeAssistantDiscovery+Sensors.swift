import BLEDomain
import BLEHCI
import BLETransport

/// Broadcasting sensors (docs/SENSORS.md) in Home Assistant: each sensor the gateway has decoded is a device of its
/// own, identified by its address alone, so the gateways of a fleet that hear it describe one device; each gateway
/// adds its own entities to it (unique ids with the gateway's id, names with it when more than one gateway could
/// report), reading that gateway's `…/sensors/<address>` stream. One entity per quantity the sensor has reported.
extension HomeAssistantDiscovery {
    /// A sensor the gateway has decoded, and every quantity key it has reported so far.
    struct HeardSensor: Sendable, Equatable {
        var address: BDAddress
        var model: String
        var keys: [String]
    }

    /// How a quantity appears in Home Assistant: platform, name, device class, unit and state class.
    struct QuantityKind: Sendable, Equatable {
        var platform = "sensor"
        var name: String
        var deviceClass: String?
        var unit: String?
        var stateClass: String? = "measurement"
        var diagnostic = false
        var enabledByDefault = true
    }

    /// Measurements named after Home Assistant's sensor device classes, in the units those classes accept.
    static let quantityKinds: [String: QuantityKind] = [
        "temperature_c": .init(name: "Temperature", deviceClass: "temperature", unit: "°C"),
        "humidity_pct": .init(name: "Humidity", deviceClass: "humidity", unit: "%"),
        "battery_pct": .init(name: "Battery", deviceClass: "battery", unit: "%", diagnostic: true),
        "pressure_hpa": .init(name: "Pressure", deviceClass: "pressure", unit: "hPa"),
        "illuminance_lx": .init(name: "Illuminance", deviceClass: "illuminance", unit: "lx"),
        "weight_kg": .init(name: "Weight", deviceClass: "weight", unit: "kg"),
        "weight_lb": .init(name: "Weight", deviceClass: "weight", unit: "lb"),
        "dew_point_c": .init(name: "Dew point", deviceClass: "temperature", unit: "°C"),
        "energy_kwh": .init(name: "Energy", deviceClass: "energy", unit: "kWh", stateClass: "total_increasing"),
        "power_w": .init(name: "Power", deviceClass: "power", unit: "W"),
        "voltage_v": .init(name: "Voltage", deviceClass: "voltage", unit: "V"),
        "starter_voltage_v": .init(name: "Starter voltage", deviceClass: "voltage", unit: "V"),
        "midpoint_voltage_v": .init(name: "Midpoint voltage", deviceClass: "voltage", unit: "V"),
        "current_a": .init(name: "Current", deviceClass: "current", unit: "A"),
        "load_current_a": .init(name: "Load current", deviceClass: "current", unit: "A"),
        "pm1_ugm3": .init(name: "PM1", deviceClass: "pm1", unit: "µg/m³"),
        "pm25_ugm3": .init(name: "PM2.5", deviceClass: "pm25", unit: "µg/m³"),
        "pm4_ugm3": .init(name: "PM4", unit: "µg/m³"),
        "pm10_ugm3": .init(name: "PM10", deviceClass: "pm10", unit: "µg/m³"),
        "co2_ppm": .init(name: "CO2", deviceClass: "carbon_dioxide", unit: "ppm"),
        "tvoc_ugm3": .init(name: "VOC", deviceClass: "volatile_organic_compounds", unit: "µg/m³"),
        "moisture_pct": .init(name: "Moisture", deviceClass: "moisture", unit: "%"),
        "distance_m": .init(name: "Distance", deviceClass: "distance", unit: "m"),
        "duration_s": .init(name: "Duration", deviceClass: "duration", unit: "s"),
        "remaining_time_s": .init(name: "Time remaining", deviceClass: "duration", unit: "s"),
        "speed_ms": .init(name: "Speed", deviceClass: "speed", unit: "m/s"),
        // Home Assistant takes only total and total_increasing for volume (measurement is volume_storage's).
        "volume_l": .init(name: "Volume", deviceClass: "volume", unit: "L", stateClass: "total"),
        "volume_storage_l": .init(name: "Volume stored", deviceClass: "volume_storage", unit: "L"),
        "water_l": .init(name: "Water", deviceClass: "water", unit: "L", stateClass: "total_increasing"),
        "gas_m3": .init(name: "Gas", deviceClass: "gas", unit: "m³", stateClass: "total_increasing"),
        "volume_flow_rate_m3h": .init(name: "Flow rate", deviceClass: "volume_flow_rate", unit: "m³/h"),
        "precipitation_mm": .init(name: "Precipitation", deviceClass: "precipitation", unit: "mm"),
        "conductivity_uscm": .init(name: "Conductivity", deviceClass: "conductivity", unit: "µS/cm"),
        "sound_level_dba": .init(name: "Sound level", deviceClass: "sound_pressure", unit: "dBA"),
        "signal_strength_dbm": .init(
            name: "Signal strength", deviceClass: "signal_strength", unit: "dBm",
            diagnostic: true),
        "tx_power_dbm": .init(
            name: "TX power", deviceClass: "signal_strength", unit: "dBm", diagnostic: true,
            enabledByDefault: false),
        "uv_index": .init(name: "UV index"),
        "voc_index": .init(name: "VOC index"),
        "nox_index": .init(name: "NOx index"),
        "formaldehyde_mgm3": .init(name: "Formaldehyde", unit: "mg/m³"),
        "rotation_deg": .init(name: "Rotation", unit: "°"),
        "direction_deg": .init(name: "Direction", unit: "°"),
        "rotational_speed_rpm": .init(name: "Rotational speed", unit: "rpm"),
        "gyroscope_dps": .init(name: "Gyroscope", unit: "°/s"),
        "acceleration_ms2": .init(name: "Acceleration", unit: "m/s²"),
        "acceleration_x_ms2": .init(name: "Acceleration X", unit: "m/s²"),
        "acceleration_y_ms2": .init(name: "Acceleration Y", unit: "m/s²"),
        "acceleration_z_ms2": .init(name: "Acceleration Z", unit: "m/s²"),
        "consumed_ah": .init(name: "Consumed", unit: "Ah"),
        "count": .init(name: "Count"),
        "movement_counter": .init(name: "Movements", stateClass: "total_increasing"),
        "packet_id": .init(name: "Packet id", stateClass: nil, diagnostic: true, enabledByDefault: false),
        "timestamp_s": .init(name: "Timestamp", stateClass: nil, diagnostic: true, enabledByDefault: false),
        "firmware_version": .init(name: "Firmware version", stateClass: nil, diagnostic: true),
        "settings_revision": .init(name: "Settings revision", stateClass: nil, diagnostic: true),
        "device_type": .init(name: "Device type", stateClass: nil, diagnostic: true),
    ]

    /// Binary states (BTHome 0x0F…0x2D, 0 or 1) and Home Assistant's binary sensor device class for each.
    static let binaryKinds: [String: String?] = [
        "generic": nil, "power": "power", "opening": "opening", "battery_low": "battery",
        "battery_charging": "battery_charging", "carbon_monoxide": "carbon_monoxide", "cold": "cold",
        "connectivity": "connectivity", "door": "door", "garage_door": "garage_door", "gas_detected": "gas",
        "heat": "heat", "light": "light", "lock": "lock", "moisture_detected": "moisture", "motion": "motion",
        "moving": "moving", "occupancy": "occupancy", "plug": "plug", "presence": "presence", "problem": "problem",
        "running": "running", "safety": "safety", "smoke": "smoke", "sound": "sound", "tamper": "tamper",
        "vibration": "vibration", "window": "window",
    ]

    /// Events (BTHome 0x3A button, 0x3C dimmer; Shelly BLU buttons send BTHome): the specification's code → Home
    /// Assistant's event type (the names its own BTHome integration fires). Code 0 is "none": no event.
    static let eventKinds: [String: (name: String, deviceClass: String, types: [Int: String])] = [
        "button_event": (
            "Button", "button",
            [
                1: "press", 2: "double_press", 3: "triple_press", 4: "long_press", 5: "long_double_press",
                6: "long_triple_press", 0x80: "hold_press",
            ]
        ),
        "dimmer_event": ("Dimmer", "button", [1: "rotate_left", 2: "rotate_right"]),
    ]

    /// A published key (`temperature_c`, or `temperature_c_2` for a second value of a quantity) as Home Assistant
    /// shows it. Keys no table knows (an open set: new formats add quantities) are plain sensors named after the key.
    static func kind(forKey key: String) -> QuantityKind {
        let base = baseKey(key)
        let ordinal = base == key ? nil : String(key.dropFirst(base.count + 1))
        var kind: QuantityKind
        if let k = quantityKinds[base] {
            kind = k
        } else if let event = eventKinds[base] {
            kind = QuantityKind(platform: "event", name: event.name, deviceClass: event.deviceClass, stateClass: nil)
        } else if let binary = binaryKinds[base] {
            kind = QuantityKind(platform: "binary_sensor", name: humanized(base), deviceClass: binary, stateClass: nil)
        } else {
            // Anything new: the number as sent.
            kind = QuantityKind(name: humanized(base), stateClass: nil)
        }
        if let ordinal { kind.name += " \(ordinal)" }
        return kind
    }

    /// `button_event_2` → `button_event`: the quantity a key (with its ordinal) is a value of.
    static func baseKey(_ key: String) -> String {
        guard let last = key.split(separator: "_").last, last.allSatisfy(\.isNumber), let i = Int(last), i > 1 else {
            return key
        }
        return String(key.dropLast(last.count + 1))
    }

    static func humanized(_ key: String) -> String {
        let words = key.split(separator: "_").map(String.init)
        guard let first = words.first else { return key }
        return ([first.prefix(1).uppercased() + first.dropFirst()] + words.dropFirst()).joined(separator: " ")
    }

    /// The discovery node every gateway announces broadcasting sensors under: a sensor belongs to no gateway, so its
    /// document is the same whichever gateways hear it (the broker's ACL lets every gateway write this node).
    static let sharedSensorNode = "blegateway-sensors"

    /// A quantity's key that becomes an entity (`s_<key>`): component ids and unique ids take `[A-Za-z0-9_]` only, and
    /// a key outside it is published on the state topic but not announced.
    static func isAnnouncedKey(_ key: String) -> Bool {
        !key.isEmpty && key != "rssi" && key.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") }
    }

    /// The device for a broadcasting sensor: one document per sensor, the same from every gateway that hears it, with
    /// one entity per quantity. Each entity follows every gateway's stream of it (`<prefix>/+/sensors/<address>`, a
    /// wildcard Home Assistant subscribes to), so its value is the newest from any of them; its attributes name the
    /// gateway that heard the newest frame best, with the RSSI. Three gateways used to give three entities per
    /// quantity ("Temperature (gw-lab)" …).
    func sensorDevice(_ s: HeardSensor) -> Device {
        let hex = s.address.topicComponent
        let deviceID = "blegateway_sensor_\(hex)"
        var dev = JSONObjectWriter()
        dev.strings("identifiers", [deviceID])
        dev.raw("connections", Array(#"[["bluetooth","\#(s.address.description)"]]"#.utf8))
        dev.string("name", Self.displayName("\(s.model) \(s.address.description)") ?? "Sensor \(s.address.description)")
        dev.string("model", Self.displayName(s.model) ?? "sensor")
        let topic = "\(topics.prefix)/+/sensors/\(hex)"
        var cmps: [Component] = []
        for key in s.keys.sorted() where Self.isAnnouncedKey(key) {
            let k = Self.kind(forKey: key)
            let uniqueID = "\(deviceID)_\(key)"
            // A frame carries the quantities it carries (a BTHome button sends its event alone): a key absent from
            // one reading keeps the entity's state rather than clearing it. Home Assistant ignores an empty output
            // from a numeric sensor's or a binary sensor's template, which keeps the state as it is; rendering
            // `this.state` back instead gave a temperature in °F as °C on a house set to imperial units (the state is
            // converted, the template's output is taken as native). Only a text sensor renders its state back.
            let value = "value_json['values']['\(key)']"
            let keep =
                k.platform == "binary_sensor" || k.stateClass != nil || k.unit != nil || k.deviceClass != nil
                ? "" : "{% else %}{{ this.state if this.state not in ['unknown', 'unavailable'] else 'None' }}"
            // No availability: the sensor is no gateway's, and one gateway going offline says nothing about it.
            cmps.append(
                entity("s_\(key)", k.platform, uniqueID, k.name, available: false) {
                    if let c = k.deviceClass { $0.string("device_class", c) }
                    if let c = k.stateClass { $0.string("state_class", c) }
                    if let u = k.unit { $0.string("unit_of_measurement", u) }
                    if k.diagnostic { $0.string("entity_category", "diagnostic") }
                    if !k.enabledByDefault { $0.bool("enabled_by_default", false) }
                    $0.string("state_topic", topic)
                    if k.platform == "event", let event = Self.eventKinds[Self.baseKey(key)] {
                        // One reading per press (SensorPublishGate lets each new press through, repeats of a packet
                        // not), but every gateway that hears the press publishes it: a frame whose counter is the one
                        // this event last fired for is the same press heard again, and renders nothing (ignored by
                        // Home Assistant), as do a message without the key and code 0 (none). Two identical presses
                        // carry two counters: two events. A format without a counter cannot be told apart.
                        let codes = event.types.sorted { $0.key < $1.key }
                        $0.strings("event_types", codes.map(\.value))
                        let table = codes.map { "\($0.key): '\($0.value)'" }.joined(separator: ", ")
                        $0.string(
                            "value_template",
                            "{% set t = {\(table)}.get(value_json['values'].get('\(key)', 0) | int) %}"
                                + "{% set c = value_json.get('counter') %}"
                                + "{% if t and (c is none or c != this.attributes.get('counter')) %}"
                                + "{{ {'event_type': t, 'counter': c, 'gateway': value_json.get('gateway')} | tojson }}"
                                + "{% endif %}")
                    } else {
                        if k.platform == "binary_sensor" {
                            $0.string(
                                "value_template",
                                "{% if '\(key)' in value_json['values'] %}{{ 'ON' if \(value) else 'OFF' }}"
                                    + "\(keep){% endif %}")
                        } else {
                            $0.string(
                                "value_template",
                                "{% if '\(key)' in value_json['values'] %}{{ \(value) }}\(keep){% endif %}"
                            )
                        }
                        $0.string("json_attributes_topic", topic)
                        $0.string("json_attributes_template", Self.heardBest)
                    }
                })
        }
        // The RSSI of the newest frame, and which gateway heard it (diagnostic, for placing the sensor).
        cmps.append(
            entity("s_rssi", "sensor", "\(deviceID)_rssi", "RSSI", available: false) {
                $0.string("device_class", "signal_strength")
                $0.string("state_class", "measurement")
                $0.string("unit_of_measurement", "dBm")
                $0.string("entity_category", "diagnostic")
                $0.bool("enabled_by_default", false)
                $0.string("state_topic", topic)
                $0.string("value_template", "{{ value_json.rssi }}")
                $0.string("json_attributes_topic", topic)
                $0.string("json_attributes_template", "{{ {'gateway': value_json.get('gateway')} | tojson }}")
            })
        return Device(objectID: deviceID, node: Self.sharedSensorNode, device: dev.finished, components: cmps)
    }

    /// The attributes of a quantity: the gateway that heard the newest frame best and its RSSI. The same frame
    /// (its counter) heard again more weakly keeps the attributes; a new frame, or a stronger copy, replaces them.
    static let heardBest =
        "{% set a = this.attributes %}{% set c = value_json.get('counter') %}{% set r = value_json.get('rssi') %}"
        + "{% if c is not none and c == a.get('counter') and r is not none and a.get('rssi') is not none "
        + "and a.get('rssi') >= r %}{{ {'gateway': a.get('gateway'), 'rssi': a.get('rssi'), 'counter': c} | tojson }}"
        + "{% else %}{{ {'gateway': value_json.get('gateway'), 'rssi': r, 'counter': c} | tojson }}{% endif %}"
}
