import BLEDomain
import BLEHCI
import BLESpool
import BLETransport

/// The sensor topic's payload (docs/TOPICS.md, docs/SENSORS.md, schema/v1/sensor.json).
extension GatewayReadings {
    /// One decoded sensor advertisement: model, quantities in SI units named after Home Assistant's device
    /// classes (the unit in the name), the packet counter where the format has one, RSSI. Values out of physical
    /// range go under `out_of_range`, never `values`; an encrypted frame that could not be read says why.
    func sensor(_ r: SensorReading, address: BDAddress, rssi: Int8?, ts: Double, synced: Bool) -> Reading {
        Reading(
            .sample, topic: topics.sensor(address.topicComponent),
            body: Self.sensorBody(r, address: address, rssi: rssi, gateway: topics.gatewayID),
            // No MQTT 5 expiry, like a peripheral's values: the readings' history outlives an outage.
            qos: sampleQoS, retain: false, ts: ts, clockSynchronized: synced, expiry: nil, run: run)
    }

    static func sensorBody(_ r: SensorReading, address: BDAddress, rssi: Int8?, gateway: String? = nil) -> [UInt8] {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        // Which gateway heard it: Home Assistant's entities follow every gateway's stream and name the one that
        // heard a frame best, and a template sees the payload, not the topic.
        if let gateway { o.string("gateway", gateway) }
        o.string("format", r.format.description)
        o.string("model", r.model.description)
        o.int("rssi", rssi)
        if let c = r.counter { o.int("counter", c) }
        o.bool("encrypted", r.wasEncrypted)
        if r.issues.contains(.keyMissing) {
            o.string("undecryptable", "key_missing")
        } else if r.issues.contains(.authenticationFailed) {
            o.string("undecryptable", "authentication_failed")
        }
        o.object("values") { v in Self.values(r, outOfRange: false, into: &v) }
        if r.issues.contains(.outOfRange) {
            o.object("out_of_range") { v in Self.values(r, outOfRange: true, into: &v) }
        }
        var issues: [String] = []
        if r.issues.contains(.truncated) { issues.append("truncated") }
        if r.issues.contains(.unknownObject) { issues.append("unknown_object") }
        if r.issues.contains(.unsupported) { issues.append("unsupported") }
        if !issues.isEmpty { o.strings("issues", issues) }
        return o.finished
    }

    /// A quantity a frame carries twice (BTHome allows it: two temperatures) is `temperature_c`, `temperature_c_2`.
    static func values(_ r: SensorReading, outOfRange: Bool, into o: inout JSONObjectWriter) {
        forEachValue(r) { key, v in
            if v.isOutOfRange == outOfRange { o.number(key, v.value, digits: 6) }
        }
    }

    /// The keys under `values` (the readings, not those out of range), in the frame's order.
    static func valueKeys(_ r: SensorReading) -> [String] {
        var keys: [String] = []
        forEachValue(r) { key, v in if !v.isOutOfRange { keys.append(key) } }
        return keys
    }

    private static func forEachValue(_ r: SensorReading, _ body: (String, SensorValue) -> Void) {
        var seen: [SensorQuantity: Int] = [:]
        for v in r {
            let n = (seen[v.quantity] ?? 0) + 1
            seen[v.quantity] = n
            body(n == 1 ? v.quantity.name : "\(v.quantity.name)_\(n)", v)
        }
    }
}
