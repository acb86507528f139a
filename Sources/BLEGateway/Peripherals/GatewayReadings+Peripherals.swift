import BLEDomain
import BLEHCI
import BLEHost
import BLESpool
import BLETransport

/// The peripheral topics' payloads (docs/TOPICS.md, schema/v1/peripheral-*.json).
extension GatewayReadings {
    /// Retained link state: CoreBluetooth's four states, with the reason by HCI name and number, the attempts of
    /// the current streak and since when.
    func peripheralState(
        _ address: BDAddress, name: String?, status: ConnectionManager.Status, since: Double,
        ts: Double, synced: Bool
    ) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        if let name { o.string("name", name) }
        o.string("state", status.state.rawValue)
        o.number("since", since)
        o.int("attempts", status.attempts)
        if let r = status.reason {
            o.string("reason", r.description)
            if let code = r.code { o.int("reason_code", code) }
        }
        return Reading(
            .state, topic: topics.peripheralState(address.topicComponent), body: o.finished, qos: stateQoS,
            retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    /// Retained `standby`: another gateway of the fleet owns the peripheral and keeps it connected
    /// (docs/PERIPHERALS.md, "One owner per peripheral").
    func peripheralStandby(
        _ address: BDAddress, name: String?, owner: String, since: Double, ts: Double,
        synced: Bool
    ) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        if let name { o.string("name", name) }
        o.string("state", "standby")
        o.number("since", since)
        o.int("attempts", 0)
        o.string("owner", owner)
        return Reading(
            .state, topic: topics.peripheralState(address.topicComponent), body: o.finished, qos: stateQoS,
            retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    /// Connection RSSI (HCI Read RSSI), a sample.
    func peripheralRSSI(_ address: BDAddress, rssi: Int8, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        o.int("rssi", rssi)
        return Reading(
            .sample, topic: topics.peripheralRSSI(address.topicComponent), body: o.finished, qos: sampleQoS,
            retain: false, ts: ts, clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }

    /// One characteristic value as hex, with the decoded form of a well-known SIG characteristic when there is one.
    /// A state reading when it came by indication or read (acknowledged, rare), a sample when notified.
    func characteristicValue(
        _ address: BDAddress, service: BluetoothUUID?, characteristic: BluetoothUUID,
        value: [UInt8], via: String, decoded: [UInt8]?, ts: Double, synced: Bool
    ) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        if let service { o.string("service", service.shortDescription) }
        o.string("characteristic", characteristic.shortDescription)
        o.string("via", via)
        var hex: [UInt8] = []
        HexDigits.append(bytes: value[...], upper: false, to: &hex)
        o.string("hex", String(decoding: hex, as: UTF8.self))
        if let decoded { o.raw("value", decoded) }
        let topic = topics.peripheralCharacteristic(address.topicComponent, characteristic.shortDescription)
        // No MQTT 5 expiry: a temperature history is worth having after an outage (beacon samples keep theirs).
        return Reading(
            .sample, topic: topic, body: o.finished, qos: sampleQoS, retain: false, ts: ts,
            clockSynchronized: synced, expiry: nil, run: run)
    }

    /// The discovered GATT database, retained: services with their handle ranges, characteristics with their value
    /// handles and properties by name, descriptors.
    func peripheralGATT(_ address: BDAddress, mtu: Int, database: GATTDatabase, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        o.int("mtu", mtu)
        var services: [UInt8] = []
        let omitted = JSONArrayWriter.write(database.services, to: &services, budget: Self.maxStateBytes) { service in
            var j = JSONObjectWriter()
            j.string("uuid", service.uuid.shortDescription)
            j.int("start", service.startHandle)
            j.int("end", service.endHandle)
            var chars: [UInt8] = []
            JSONArrayWriter.write(service.characteristics, to: &chars) { c in
                var k = JSONObjectWriter()
                k.string("uuid", c.uuid.shortDescription)
                k.int("handle", c.valueHandle)
                var props: [UInt8] = []
                JSONArrayWriter.write(c.properties.names, to: &props) { name in
                    var b: [UInt8] = []
                    JSONWriter.appendString(name, to: &b)
                    return b
                }
                k.raw("properties", props)
                var descriptors: [UInt8] = []
                JSONArrayWriter.write(c.descriptors, to: &descriptors) { d in
                    var dj = JSONObjectWriter()
                    dj.string("uuid", d.uuid.shortDescription)
                    dj.int("handle", d.handle)
                    return dj.finished
                }
                k.raw("descriptors", descriptors)
                return k.finished
            }
            j.raw("characteristics", chars)
            return j.finished
        }
        o.raw("services", services)
        // A server with thousands of attributes would make a retained message brokers refuse: what does not fit is
        // counted here instead.
        if omitted > 0 { o.int("truncated_services", omitted) }
        return Reading(
            .state, topic: topics.peripheralGATT(address.topicComponent), body: o.finished, qos: stateQoS,
            retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    /// The outcome of one write command: `success`, or `error` with the reason (an ATT error by name and number,
    /// or why the gateway refused it).
    func writeResult(
        _ address: BDAddress, id: String?, characteristic: String?, error: String?, attError: UInt8?,
        ts: Double, synced: Bool
    ) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        if let id { o.string("id", id) }
        if let characteristic { o.string("characteristic", characteristic) }
        o.string("result", error == nil ? "success" : "error")
        if let error { o.string("error", error) }
        if let attError { o.int("att_error", attError) }
        return Reading(
            .state, topic: topics.peripheralWriteResult(address.topicComponent), body: o.finished,
            qos: stateQoS, retain: false, ts: ts, clockSynchronized: synced, run: run)
    }
}
