import BLEHCI
import BLETransport

/// Where a sensor frame sits in an advertisement, found during the advertisement's one decoding
/// pass by a table lookup on the service data UUID or the company id: an advertisement of no known
/// sensor costs one failed switch per service-data or manufacturer structure, nothing more.
public struct SensorSource: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let bthome = Self(rawValue: 1)
    /// Service data 0xFCD2.
    public static let bthomeUUID: UInt16 = 0xFCD2
    /// Environmental Sensing service data (0x181A), as the ATC1441 and PVVX firmwares use it.
    public static let environmental = Self(rawValue: 2)
    public static let environmentalUUID: UInt16 = 0x181A
    public static let miBeacon = Self(rawValue: 3)
    public static let miBeaconUUID: UInt16 = 0xFE95
    public static let qingping = Self(rawValue: 4)
    public static let qingpingUUID: UInt16 = 0xFDCD
    public static let switchBot = Self(rawValue: 5)
    public static let switchBotUUID: UInt16 = 0xFD3D
    /// SwitchBot's older firmware advertises under the 16-bit UUID 0x0D00.
    public static let switchBotLegacyUUID: UInt16 = 0x0D00
    public static let ruuvi = Self(rawValue: 6)
    /// Ruuvi Innovations Ltd (Assigned Numbers, company identifiers).
    public static let ruuviCompany: UInt16 = 0x0499
    public static let goveeEC88 = Self(rawValue: 7)
    /// Govee's H5072/H5074/H5075 put their readings under "company" 0xEC88.
    public static let goveeCompanyEC88: UInt16 = 0xEC88
    public static let govee0001 = Self(rawValue: 8)
    public static let victron = Self(rawValue: 9)
    /// Victron Energy BV.
    public static let victronCompany: UInt16 = 0x02E1
    /// Govee's H5101/H5102/H5177 use "company" 0x0001 (not theirs: a known misuse, kept as found).
    public static let goveeCompany0001: UInt16 = 0x0001

    /// The table on 16-bit service data UUIDs.
    @inlinable public static func forServiceData16(_ uuid: UInt16) -> SensorSource? {
        switch uuid {
        case bthomeUUID: .bthome
        case environmentalUUID: .environmental
        case miBeaconUUID: .miBeacon
        case qingpingUUID: .qingping
        case switchBotUUID, switchBotLegacyUUID: .switchBot
        default: nil
        }
    }

    /// The table on manufacturer company ids.
    @inlinable public static func forCompany(_ company: UInt16) -> SensorSource? {
        switch company {
        case ruuviCompany: .ruuvi
        case goveeCompanyEC88: .goveeEC88
        case goveeCompany0001: .govee0001
        case victronCompany: .victron
        default: nil
        }
    }
}

/// Decodes the sensor frame an advertisement carries, if any, into a `SensorReading`.
public enum SensorDecoder {
    /// `address` is the advertiser's (formats that encrypt put it in the nonce, some repeat it in the
    /// frame); `keys` are needed only for encrypted frames. Never traps, whatever the bytes.
    @inlinable public static func decode(
        _ ad: Advertisement, address: BDAddress, keys: SensorKeys = .none
    ) -> SensorReading? {
        // Inkbird gives no UUID and no company: its "company id" is the temperature. Only its name, "sps" or "tps",
        // says what the nine octets are; so it is asked first, or 11.77 °C (0x0499) would read as a Ruuvi frame.
        // A name that only looks like Inkbird's (its frame is not nine octets) falls through to the other formats.
        if let m = ad.manufacturerRange, let name = ad.nameBytes, InkbirdFrame.recognises(name: name),
            let reading = ad.data.withUnsafeBufferPointer({ whole -> SensorReading? in
                let origin = ad.data.startIndex
                let r = ADReader(whole, position: m.lowerBound - origin, end: m.upperBound - origin)
                return InkbirdFrame.decode(company: ad.manufacturerCompany, frame: r, name: name)
            })
        {
            return reading
        }
        if let source = ad.sensorSource, let range = ad.sensorRange {
            return ad.data.withUnsafeBufferPointer { whole in
                let origin = ad.data.startIndex
                let r = ADReader(whole, position: range.lowerBound - origin, end: range.upperBound - origin)
                return decode(source: source, frame: r, address: address, keys: keys)
            }
        }
        return nil
    }

    @inlinable static func decode(
        source: SensorSource, frame: ADReader, address: BDAddress, keys: SensorKeys
    ) -> SensorReading? {
        switch source {
        case .bthome: BTHomeFrame.decode(frame, address: address, keys: keys)
        case .environmental: EnvironmentalFrame.decode(frame, address: address)
        case .miBeacon: MiBeaconFrame.decode(frame, address: address, keys: keys)
        case .qingping: QingpingFrame.decode(frame)
        case .switchBot: SwitchBotFrame.decode(frame)
        case .ruuvi: RuuviFrame.decode(frame)
        case .goveeEC88, .govee0001: GoveeFrame.decode(frame, source: source)
        case .victron: VictronFrame.decode(frame, address: address, keys: keys)
        default: nil
        }
    }
}
