import BLEHCI
import BLETransport

/// Which sightings a scan keeps.
///
/// Terms of the same kind are alternatives (OR); kinds combine with AND. So
/// `uuid:FEAA uuid:180F rssi:-80` keeps sightings that mention FEAA or 180F *and* are at least
/// -80 dBm. An empty filter keeps everything.
///
/// - `uuid`: matches a service UUID list entry, a service data UUID, or an iBeacon proximity UUID.
/// - `name`: a prefix of the local name's UTF-8 octets (case-sensitive).
/// - `addr`: the advertiser's address.
/// - `company`: the company id of manufacturer specific data (any structure; AltBeacons included).
/// - `rssi`: a minimum in dBm; a sighting without RSSI (controller said 127) does not pass.
public struct ScanFilter: Hashable, Sendable {
    public var serviceUUIDs: [BluetoothUUID] = []
    public var namePrefixes: [[UInt8]] = []
    public var addresses: [BDAddress] = []
    public var companyIDs: [UInt16] = []
    /// If several `rssi:` terms are given, the last one counts.
    public var minimumRSSI: Int8?

    public init() {}

    /// Parses CLI terms such as `uuid:FEAA`, `name:Kitchen`, `addr:AA:BB:CC:DD:EE:FF`,
    /// `company:0x004C`, `rssi:-80`.
    public init(parsing terms: some Sequence<String>) throws(ScanFilterError) {
        for t in terms { try add(t) }
    }

    public var isEmpty: Bool {
        serviceUUIDs.isEmpty && namePrefixes.isEmpty && addresses.isEmpty && companyIDs.isEmpty && minimumRSSI == nil
    }

    public mutating func add(_ term: String) throws(ScanFilterError) {
        guard let colon = term.firstIndex(of: ":") else { throw .missingKind(term) }
        let kind = term[..<colon]
        let value = term[term.index(after: colon)...]
        guard !value.isEmpty else { throw .emptyValue(term) }
        switch kind.lowercased() {
        case "uuid":
            guard let u = BluetoothUUID(value) else { throw .badValue(term, expected: Self.uuidHelp) }
            serviceUUIDs.append(u)
        case "name":
            namePrefixes.append(Array(value.utf8))
        case "addr", "address":
            guard let a = BDAddress(value), value.count == 17 || value.count == 12 else {
                throw .badValue(term, expected: "an address like AA:BB:CC:DD:EE:FF")
            }
            addresses.append(a)
        case "company":
            let digits = value.hasPrefix("0x") || value.hasPrefix("0X") ? value.dropFirst(2) : value[...]
            let radix = digits.count == value.count ? 10 : 16
            guard let c = UInt16(digits, radix: radix) else {
                throw .badValue(term, expected: "a 16-bit company id like 0x004C or 76")
            }
            companyIDs.append(c)
        case "rssi":
            guard let r = Int(value), r >= -127, r <= 20 else {
                throw .badValue(term, expected: "a minimum RSSI in dBm between -127 and 20, like -80")
            }
            minimumRSSI = Int8(r)
        default:
            throw .unknownKind(term)
        }
    }

    static let uuidHelp = "a 16-bit (FEAA), 32-bit (0000FEAA) or 128-bit (E2C56DB5-DFFB-48D2-B060-D0F5A71096E0) UUID"

    /// Whether the sighting passes. Does not allocate.
    public func matches(_ s: Sighting) -> Bool {
        if let min = minimumRSSI {
            guard let r = s.rssi, r >= min else { return false }
        }
        if !addresses.isEmpty && !addresses.contains(s.address) { return false }
        let ad = s.advertisement
        if !namePrefixes.isEmpty {
            guard let name = ad.nameBytes, namePrefixes.contains(where: { name.starts(with: $0) }) else {
                return false
            }
        }
        if !companyIDs.isEmpty {
            var found = false
            for st in AdvertisingStructures(ad.data) where st.type == .manufacturerSpecificData && st.value.count >= 2 {
                let c = UInt16(st.value[st.value.startIndex]) | UInt16(st.value[st.value.startIndex + 1]) << 8
                if companyIDs.contains(c) {
                    found = true
                    break
                }
            }
            if !found { return false }
        }
        if !serviceUUIDs.isEmpty {
            let beaconUUID: BluetoothUUID? = if case .iBeacon(let b)? = ad.beacon { b.proximityUUID } else { nil }
            guard serviceUUIDs.contains(where: { $0 == beaconUUID || ad.mentionsService($0) }) else { return false }
        }
        return true
    }
}

/// Why a filter term was rejected; `description` is the message the CLI prints.
public struct ScanFilterError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable { case missingKind, unknownKind, emptyValue, badValue }
    public let code: Code
    public let term: String
    public let description: String

    static func missingKind(_ t: String) -> Self {
        Self(
            code: .missingKind, term: t,
            description: "filter '\(t)': expected kind:value, kind one of uuid, name, addr, company, rssi")
    }
    static func unknownKind(_ t: String) -> Self {
        Self(
            code: .unknownKind, term: t,
            description: "filter '\(t)': unknown kind (expected uuid, name, addr, company or rssi)")
    }
    static func emptyValue(_ t: String) -> Self {
        Self(code: .emptyValue, term: t, description: "filter '\(t)': empty value")
    }
    static func badValue(_ t: String, expected: String) -> Self {
        Self(code: .badValue, term: t, description: "filter '\(t)': expected \(expected)")
    }
}
