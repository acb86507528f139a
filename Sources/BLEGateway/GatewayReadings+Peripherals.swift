import BLEDomain
import BLEHCI
import BLEHost
import BLESpool

/// The peripheral topics' payloads (docs/TOPICS.md, schema/v1/peripheral-*.json).
extension GatewayReadings {
    /// Retained link state: CoreBluetooth's four states, with the reason by HCI name and number, the attempts of
    /// the current streak and since when.
    func peripheralState(_ address: BDAddress, name: String?, status: ConnectionManager.Status, since: Double,
                         ts: Double, synced: Bool) -> Reading {
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
        return Reading(.state, topic: topics.peripheralState(address.topicComponent), body: o.finished, qos: stateQoS,
                       retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    /// Connection RSSI (HCI Read RSSI), a sample.
    func peripheralRSSI(_ address: BDAddress, rssi: Int8, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        o.int("rssi", rssi)
        return Reading(.sample, topic: topics.peripheralRSSI(address.topicComponent), body: o.finished, qos: sampleQoS,
                       retain: false, ts: ts, clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }

    /// One characteristic value as hex, with the decoded form of a well-known SIG characteristic when there is one.
    /// A state reading when it came by indication or read (acknowledged, rare), a sample when notified.
    func characteristicValue(_ address: BDAddress, service: BluetoothUUID?, characteristic: BluetoothUUID,
                             value: [UInt8], via: String, decoded: [UInt8]?, ts: Double, synced: Bool) -> Reading {
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
        return Reading(.sample, topic: topic, body: o.finished, qos: sampleQoS, retain: false, ts: ts,
                       clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }

    /// The discovered GATT database, retained (`tree` is the rendered JSON array of services).
    func peripheralGATT(_ address: BDAddress, mtu: Int, tree: [UInt8], ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        o.int("mtu", mtu)
        o.raw("services", tree)
        return Reading(.state, topic: topics.peripheralGATT(address.topicComponent), body: o.finished, qos: stateQoS,
                       retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    /// The outcome of one write command: `success`, or `error` with the reason (an ATT error by name and number,
    /// or why the gateway refused it).
    func writeResult(_ address: BDAddress, id: String?, characteristic: String?, error: String?, attError: UInt8?,
                     ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("address", address.description)
        if let id { o.string("id", id) }
        if let characteristic { o.string("characteristic", characteristic) }
        o.string("result", error == nil ? "success" : "error")
        if let error { o.string("error", error) }
        if let attError { o.int("att_error", attError) }
        return Reading(.state, topic: topics.peripheralWriteResult(address.topicComponent), body: o.finished,
                       qos: stateQoS, retain: false, ts: ts, clockSynchronized: synced, run: run)
    }
}
