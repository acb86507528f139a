import BLETransport

/// A beacon frame recognised in an advertisement: small fixed-size values, no allocation to build one.
public enum Beacon: Hashable, Sendable {
    case iBeacon(IBeacon)
    case eddystoneUID(EddystoneUID)
    case eddystoneURL(EddystoneURL)
    case eddystoneTLM(EddystoneTLM)
    case eddystoneEID(EddystoneEID)
    case altBeacon(AltBeacon)

    /// The "kind" string of the JSON line format (docs/SCAN_JSON.md).
    public var kind: String {
        switch self {
        case .iBeacon: "ibeacon"
        case .eddystoneUID: "eddystone-uid"
        case .eddystoneURL: "eddystone-url"
        case .eddystoneTLM: "eddystone-tlm"
        case .eddystoneEID: "eddystone-eid"
        case .altBeacon: "altbeacon"
        }
    }

    /// Recognises iBeacon or AltBeacon in manufacturer specific data (company id already read).
    @inlinable static func fromManufacturerData(company: UInt16, data: ADReader) -> Beacon? {
        if company == IBeacon.appleCompanyID, let b = IBeacon(reading: data) { return .iBeacon(b) }
        if let b = AltBeacon(company: company, reading: data) { return .altBeacon(b) }
        return nil
    }

    /// Recognises an Eddystone frame in 16-bit service data (UUID already read).
    @inlinable static func fromServiceData16(uuid: UInt16, data: ADReader) -> Beacon? {
        guard uuid == EddystoneFrame.serviceUUID else { return nil }
        return EddystoneFrame.decode(reading: data)
    }
}
