import BLEHCI
import BLETransport

/// The `blegateway scan --json` line format: one JSON object per sighting, fields as documented in
/// docs/SCAN_JSON.md (a contract other tools parse; add fields, never rename them).
extension Sighting {
    /// Appends the object (no trailing newline). Without `includeTimestamp` the object starts at "address",
    /// for payloads whose envelope already carries the time.
    public func appendJSON(to out: inout [UInt8], includeTimestamp: Bool = true) {
        if includeTimestamp {
            JSONWriter.raw(#"{"ts":"#, &out)
            // Any clock value prints: beyond ±10^15 s (or NaN) there is no meaningful time to give.
            if timestamp.isFinite && timestamp.magnitude < 1e15 {
                JSONWriter.appendFixed(Int64((timestamp * 1000).rounded()), scale: 3, to: &out)
            } else {
                JSONWriter.raw("null", &out)
            }
            JSONWriter.key("address", &out)
        } else {
            JSONWriter.raw(#"{"address":"#, &out)
        }
        out.append(UInt8(ascii: "\""))
        address.appendDescription(to: &out)
        out.append(UInt8(ascii: "\""))
        JSONWriter.key("address_type", &out)
        if let name = addressType.staticName {
            out.append(UInt8(ascii: "\""))
            JSONWriter.raw(name, &out)
            out.append(UInt8(ascii: "\""))
        } else {
            JSONWriter.appendString(addressType.description, to: &out)
        }
        JSONWriter.key("rssi", &out)
        JSONWriter.int(rssi.map(Int64.init), &out)
        JSONWriter.key("tx_power", &out)
        JSONWriter.int(txPower.map(Int64.init), &out)
        JSONWriter.key("connectable", &out)
        JSONWriter.bool(isConnectable, &out)
        JSONWriter.key("scan_response", &out)
        JSONWriter.bool(isScanResponse, &out)
        JSONWriter.key("name", &out)
        if let n = advertisement.nameBytes {
            JSONWriter.appendString(untrusted: n, to: &out)
        } else {
            JSONWriter.raw("null", &out)
        }
        JSONWriter.key("kind", &out)
        JSONWriter.appendString(advertisement.beacon?.kind ?? "other", to: &out)
        JSONWriter.key("id", &out)
        out.append(UInt8(ascii: "\""))
        identity.appendID(to: &out)
        out.append(UInt8(ascii: "\""))
        if let beacon = advertisement.beacon { Self.appendBeacon(beacon, to: &out) }
        JSONWriter.key("flags", &out)
        JSONWriter.int(advertisement.flags.map(Int64.init), &out)
        JSONWriter.key("appearance", &out)
        JSONWriter.int(advertisement.appearance.map(Int64.init), &out)
        JSONWriter.key("services", &out)
        out.append(UInt8(ascii: "["))
        var first = true
        advertisement.forEachServiceUUID { u in
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            u.appendDescription(to: &out)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "]"))
        JSONWriter.key("manufacturer", &out)
        if let m = advertisement.manufacturerData {
            JSONWriter.raw(#"{"company_id":"#, &out)
            JSONWriter.appendDecimal(Int64(m.companyID), to: &out)
            JSONWriter.key("data", &out)
            JSONWriter.hexString(m.data, &out)
            out.append(UInt8(ascii: "}"))
        } else {
            JSONWriter.raw("null", &out)
        }
        JSONWriter.key("service_data", &out)
        out.append(UInt8(ascii: "["))
        for (i, sd) in advertisement.serviceData.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.raw(#"{"uuid":""#, &out)
            sd.uuid.appendDescription(to: &out)
            out.append(UInt8(ascii: "\""))
            JSONWriter.key("data", &out)
            JSONWriter.hexString(sd.data, &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        if !advertisement.issues.isEmpty {
            JSONWriter.key("issues", &out)
            out.append(UInt8(ascii: "["))
            let names: [(AdvertisingIssues, String)] = [
                (.truncated, "truncated"), (.zeroLength, "zero-length"), (.badFieldLength, "bad-field-length"),
                (.oversized, "oversized"),
            ]
            var firstIssue = true
            for (flag, name) in names where advertisement.issues.contains(flag) {
                if !firstIssue { out.append(UInt8(ascii: ",")) }
                firstIssue = false
                JSONWriter.appendString(name, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The JSON object as one line, without the newline.
    public var jsonLine: String {
        var out = [UInt8]()
        out.reserveCapacity(384)
        appendJSON(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func appendBeacon(_ beacon: Beacon, to out: inout [UInt8]) {
        switch beacon {
        case .iBeacon(let b):
            JSONWriter.key("ibeacon", &out)
            JSONWriter.raw(#"{"uuid":""#, &out)
            b.proximityUUID.appendLongDescription(to: &out)
            out.append(UInt8(ascii: "\""))
            JSONWriter.key("major", &out)
            JSONWriter.appendDecimal(Int64(b.major), to: &out)
            JSONWriter.key("minor", &out)
            JSONWriter.appendDecimal(Int64(b.minor), to: &out)
            JSONWriter.key("measured_power", &out)
            JSONWriter.appendDecimal(Int64(b.measuredPower), to: &out)
            out.append(UInt8(ascii: "}"))
        case .eddystoneUID(let b):
            JSONWriter.key("eddystone", &out)
            JSONWriter.raw(#"{"namespace":""#, &out)
            b.appendNamespaceHex(to: &out)
            JSONWriter.raw(#"","instance":""#, &out)
            b.appendInstanceHex(to: &out)
            out.append(UInt8(ascii: "\""))
            JSONWriter.key("tx_power_0m", &out)
            JSONWriter.appendDecimal(Int64(b.txPowerAt0m), to: &out)
            out.append(UInt8(ascii: "}"))
        case .eddystoneURL(let b):
            JSONWriter.key("eddystone", &out)
            JSONWriter.raw(#"{"url":"#, &out)
            JSONWriter.appendString(b.url, to: &out)
            JSONWriter.key("tx_power_0m", &out)
            JSONWriter.appendDecimal(Int64(b.txPowerAt0m), to: &out)
            out.append(UInt8(ascii: "}"))
        case .eddystoneTLM(.plain(let t)):
            JSONWriter.key("eddystone", &out)
            JSONWriter.raw(#"{"version":0"#, &out)
            JSONWriter.key("battery_mv", &out)
            JSONWriter.int(t.batteryMillivolts == 0 ? nil : Int64(t.batteryMillivolts), &out)
            JSONWriter.key("temperature_c", &out)
            if t.temperatureRaw == Int16(bitPattern: 0x8000) {
                JSONWriter.raw("null", &out)
            } else {
                // 8.8 fixed point: 1/256 = 0.00390625 exactly, so 8 decimals print it exactly.
                JSONWriter.appendFixed(Int64(t.temperatureRaw) * 390_625, scale: 8, to: &out)
            }
            JSONWriter.key("adv_count", &out)
            JSONWriter.appendDecimal(Int64(t.advertisingCount), to: &out)
            JSONWriter.key("uptime_s", &out)
            JSONWriter.appendFixed(Int64(t.uptimeDeciseconds), scale: 1, to: &out)
            out.append(UInt8(ascii: "}"))
        case .eddystoneTLM(.encrypted(let bytes)):
            JSONWriter.key("eddystone", &out)
            JSONWriter.raw(#"{"version":1"#, &out)
            JSONWriter.key("etlm", &out)
            JSONWriter.hexString(bytes.prefix(12), &out)
            JSONWriter.key("salt", &out)
            JSONWriter.hexString(bytes.dropFirst(12).prefix(2), &out)
            JSONWriter.key("mic", &out)
            JSONWriter.hexString(bytes.dropFirst(14), &out)
            out.append(UInt8(ascii: "}"))
        case .eddystoneEID(let b):
            JSONWriter.key("eddystone", &out)
            JSONWriter.raw(#"{"eid":""#, &out)
            HexDigits.append(b.eid, digits: 16, upper: false, to: &out)
            out.append(UInt8(ascii: "\""))
            JSONWriter.key("tx_power_0m", &out)
            JSONWriter.appendDecimal(Int64(b.txPowerAt0m), to: &out)
            out.append(UInt8(ascii: "}"))
        case .altBeacon(let b):
            JSONWriter.key("altbeacon", &out)
            JSONWriter.raw(#"{"id":""#, &out)
            b.appendIDHex(to: &out)
            out.append(UInt8(ascii: "\""))
            JSONWriter.key("company_id", &out)
            JSONWriter.appendDecimal(Int64(b.companyID), to: &out)
            JSONWriter.key("reference_rssi", &out)
            JSONWriter.appendDecimal(Int64(b.referenceRSSI), to: &out)
            JSONWriter.key("mfg_reserved", &out)
            JSONWriter.appendDecimal(Int64(b.manufacturerReserved), to: &out)
            out.append(UInt8(ascii: "}"))
        }
    }
}
