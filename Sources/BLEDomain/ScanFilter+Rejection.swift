import BLEHCI
import BLETransport

/// Why a sighting fails the scan filter, criterion by criterion, for `blegateway explain`: the same tests as
/// `matches`, in the same order, saying which one failed. (`matches` stays the allocation-free path; the two are
/// checked against each other by ScanFilterRejectionTests.)
extension ScanFilter {
    /// nil when the sighting passes; else the criterion it failed, in the words of the `scan.filters` terms.
    public func rejection(_ s: Sighting) -> String? {
        if let min = minimumRSSI {
            guard let r = s.rssi else { return "rssi:\(min): the report carried no RSSI (HCI's 127)" }
            if r < min { return "rssi:\(min): heard at \(r) dBm, below it" }
        }
        if !addresses.isEmpty && !addresses.contains(s.address) {
            return "address: \(s.address) is not among \(addresses.map(\.description).joined(separator: ", "))"
        }
        let ad = s.advertisement
        if !namePrefixes.isEmpty {
            let wanted = namePrefixes.map { "name:" + String(decoding: $0, as: UTF8.self) }.joined(separator: ", ")
            guard let name = ad.nameBytes else { return "\(wanted): the advertisement carries no name" }
            if !namePrefixes.contains(where: { name.starts(with: $0) }) {
                return "\(wanted): its name \"\(String(decoding: name, as: UTF8.self))\" starts with none of them"
            }
        }
        if !companyIDs.isEmpty {
            var seen: [UInt16] = []
            for st in AdvertisingStructures(ad.data) where st.type == .manufacturerSpecificData && st.value.count >= 2 {
                seen.append(UInt16(st.value[st.value.startIndex]) | UInt16(st.value[st.value.startIndex + 1]) << 8)
            }
            if !seen.contains(where: companyIDs.contains) {
                let wanted = companyIDs.map { "company:" + Self.hex($0) }.joined(separator: ", ")
                return seen.isEmpty
                    ? "\(wanted): no manufacturer data"
                    : "\(wanted): its manufacturer data is from " + seen.map(Self.hex).joined(separator: ", ")
            }
        }
        if !serviceUUIDs.isEmpty {
            let beaconUUID: BluetoothUUID? = if case .iBeacon(let b)? = ad.beacon { b.proximityUUID } else { nil }
            if !serviceUUIDs.contains(where: { $0 == beaconUUID || ad.mentionsService($0) }) {
                let wanted = serviceUUIDs.map { "uuid:" + $0.shortDescription }.joined(separator: ", ")
                return "\(wanted): the advertisement mentions none of them (nor is it an iBeacon with that UUID)"
            }
        }
        return nil
    }

    static func hex(_ v: UInt16) -> String { "0x" + upperHex(v, digits: 4) }
}
