import BLEHCI
import BLETransport

/// What a simulated device broadcasts. Each case builds its legacy advertising data (≤ 31 octets)
/// exactly as the real devices lay it out, and names itself with the gateway's beacon-id scheme.
public enum BeaconFrame: Sendable, Hashable {
    /// Apple iBeacon: manufacturer data, company 0x004C, type 0x02, length 0x15, then proximity
    /// UUID(16) major(2, big-endian) minor(2, big-endian) measured power(1, dBm at 1 m).
    case iBeacon(uuid: [UInt8], major: UInt16, minor: UInt16, measuredPower: Int8)
    /// Eddystone-UID (google/eddystone, protocol-specification.md): service data for 0xFEAA, frame
    /// type 0x00, Tx power at 0 m(1), namespace(10), instance(6), RFU(2).
    case eddystoneUID(namespace: [UInt8], instance: [UInt8], txPowerAt0m: Int8)
    /// Eddystone-URL: frame type 0x10, Tx power at 0 m(1), scheme prefix(1), encoded URL (≤ 17).
    case eddystoneURL(url: String, txPowerAt0m: Int8)
    /// Eddystone-TLM (unencrypted, version 0): frame type 0x20, version(1), VBATT mV(2), temperature
    /// 8.8 fixed point(2), ADV_CNT(4), SEC_CNT in 0.1 s(4), all big-endian. Counts are filled per event.
    case eddystoneTLM(batteryMillivolts: UInt16, temperatureC: Double)
    /// AltBeacon (altbeacon/spec): manufacturer data, the company id (little-endian), beacon code
    /// 0xBEAC, beacon id(20), reference RSSI at 1 m(1), manufacturer reserved(1).
    case altBeacon(company: UInt16, id: [UInt8], referenceRSSI: Int8, reserved: UInt8)
    /// A plain connectable device: flags, complete local name, optional 16-bit service UUIDs.
    case named(name: String, serviceUUIDs: [UInt16])
    /// A sensor broadcasting drifting readings (SimSensorFrames.swift).
    case sensor(SimSensor)

    /// The gateway's id for this beacon: the frame's identity where it has one, otherwise the address.
    public func beaconID(address: BDAddress) -> String {
        switch self {
        case .iBeacon(let uuid, let major, let minor, _):
            return "ibeacon-\(hexLower(uuid))-\(major)-\(minor)"
        case .eddystoneUID(let namespace, let instance, _):
            return "eddystone-\(hexLower(namespace))-\(hexLower(instance))"
        case .altBeacon(_, let id, _, _):
            return "altbeacon-\(hexLower(id))"
        default:
            return "mac-\(address.topicComponent)"
        }
    }

    /// Whether this is a broadcasting sensor.
    public var isSensor: Bool {
        if case .sensor = self { return true }
        return false
    }

    /// Whether the advertisement changes from event to event (TLM counters), so it cannot be cached.
    public var isDynamic: Bool {
        switch self {
        case .eddystoneTLM, .sensor: return true
        default: return false
        }
    }

    /// The legacy PDU the device uses: named devices are connectable (ADV_IND), beacons are not
    /// (ADV_NONCONN_IND) unless they carry a scan response, then scannable (ADV_SCAN_IND).
    public func pduType(hasScanResponse: Bool) -> UInt8 {
        if case .named = self { return SimEvents.LegacyEventType.advInd }
        return hasScanResponse ? SimEvents.LegacyEventType.advScanInd : SimEvents.LegacyEventType.advNonconnInd
    }

    /// Flags AD (Core Supplement, Part A, §1.3): LE General Discoverable, BR/EDR Not Supported.
    static let flags: [UInt8] = [0x02, 0x01, 0x06]

    /// The advertising data. `eventCount` and `uptime` feed TLM's counters.
    public func advertisingData(eventCount: UInt32 = 0, uptimeSeconds: Double = 0) -> [UInt8] {
        var d = Self.flags
        switch self {
        case .iBeacon(let uuid, let major, let minor, let power):
            d += [0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + uuid
            d += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF)]
            d.append(UInt8(bitPattern: power))
        case .eddystoneUID(let namespace, let instance, let tx):
            d += [0x03, 0x03, 0xAA, 0xFE]
            d += [0x17, 0x16, 0xAA, 0xFE, 0x00, UInt8(bitPattern: tx)] + namespace + instance + [0x00, 0x00]
        case .eddystoneURL(let url, let tx):
            let encoded = Self.encodeURL(url)
            d += [0x03, 0x03, 0xAA, 0xFE]
            d += [UInt8(5 + encoded.count), 0x16, 0xAA, 0xFE, 0x10, UInt8(bitPattern: tx)] + encoded
        case .eddystoneTLM(let mv, let celsius):
            let temp = Int16(max(-128, min(127.99, celsius)) * 256)
            let secs = UInt32(min(Double(UInt32.max), uptimeSeconds * 10))
            d += [0x03, 0x03, 0xAA, 0xFE]
            d += [0x11, 0x16, 0xAA, 0xFE, 0x20, 0x00]
            d += [UInt8(mv >> 8), UInt8(mv & 0xFF)]
            d += [UInt8(UInt16(bitPattern: temp) >> 8), UInt8(UInt16(bitPattern: temp) & 0xFF)]
            d += be32(eventCount) + be32(secs)
        case .altBeacon(let company, let id, let rssi, let reserved):
            d += [0x1B, 0xFF, UInt8(company & 0xFF), UInt8(company >> 8), 0xBE, 0xAC] + id
            d += [UInt8(bitPattern: rssi), reserved]
        case .named(let name, let uuids):
            if !uuids.isEmpty {
                let list = uuids.prefix(4)
                d.append(UInt8(1 + 2 * list.count))
                d.append(0x03)  // Complete List of 16-bit Service UUIDs
                for u in list { d += [UInt8(u & 0xFF), UInt8(u >> 8)] }
            }
            let room = 31 - d.count - 2
            let bytes = Array(name.utf8.prefix(max(0, room)))
            d.append(UInt8(1 + bytes.count))
            d.append(bytes.count == name.utf8.count ? 0x09 : 0x08)  // Complete / Shortened Local Name
            d += bytes
        case .sensor(let sensor):
            d += sensor.advertisingData(at: uptimeSeconds)
        }
        return d
    }

    /// Scheme prefixes and text expansions of Eddystone-URL.
    static let urlSchemes = ["http://www.", "https://www.", "http://", "https://"]
    static let urlExpansions = [
        ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
        ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
    ]

    static func encodeURL(_ url: String) -> [UInt8] {
        var out = [UInt8]()
        var rest = Substring(url)
        if let i = urlSchemes.firstIndex(where: { rest.hasPrefix($0) }) {
            out.append(UInt8(i))
            rest = rest.dropFirst(urlSchemes[i].count)
        } else {
            out.append(0x03)
        }
        while !rest.isEmpty && out.count < 18 {
            if let i = urlExpansions.firstIndex(where: { rest.hasPrefix($0) }) {
                out.append(UInt8(i))
                rest = rest.dropFirst(urlExpansions[i].count)
            } else {
                out.append(rest.utf8.first!)
                rest = rest.dropFirst()
            }
        }
        return out
    }
}

func be32(_ v: UInt32) -> [UInt8] {
    [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
}

func hexLower(_ bytes: [UInt8]) -> String { HexDigits.string(bytes) }

/// Parses hex, ignoring '-' and ':' (UUIDs, namespaces), into exactly `count` bytes.
func parseHex(_ text: String, count: Int) -> [UInt8]? {
    guard !text.contains(where: { $0 == " " || $0 == "\t" }) else { return nil }
    return HexDigits.parse(text, count: count)
}
