import BLEHCI
import BLETransport

@testable import BLEDomain

/// Test vectors: AD data from the specifications' frame layouts and documented captures, and the
/// HCI events that carry them.
enum Vectors {
    static func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    /// Apple's AirLocate sample beacon: flags, then the iBeacon prefix `1A FF 4C 00 02 15`, proximity
    /// UUID E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major 1, minor 2, measured power -59 (0xC5).
    static let iBeacon = hex("02 01 06 1A FF 4C 00 02 15 E2C56DB5DFFB48D2B060D0F5A71096E0 0001 0002 C5")

    /// Eddystone-UID (eddystone-uid.md layout): Complete 16-bit UUIDs FEAA, then service data
    /// `00 | -25 dBm | namespace EDD1EBEAC04E5DEFA017 | instance 0BDB87539B67 | RFU 00 00`.
    static let eddystoneUID = hex("02 01 06 03 03 AA FE 17 16 AA FE 00 E7 EDD1EBEAC04E5DEFA017 0BDB87539B67 0000")

    /// Eddystone-URL "https://www.google.com": scheme 0x01 "https://www.", "google", 0x07 ".com".
    static let eddystoneURL = hex("03 03 AA FE 0D 16 AA FE 10 EB 01 676F6F676C65 07")

    /// Eddystone-TLM version 0: 3000 mV, 23.5 °C (0x1780), 256 advertisements, 100.0 s (1000 × 0.1 s).
    static let eddystoneTLM = hex("03 03 AA FE 11 16 AA FE 20 00 0BB8 1780 00000100 000003E8")

    /// Eddystone-TLM version 1 (encrypted): ETLM 12 octets, salt 2, MIC 2.
    static let eddystoneETLM = hex("03 03 AA FE 15 16 AA FE 20 01 000102030405060708090A0B ABCD 1234")

    /// Eddystone-EID: `30 | ranging data | 8-octet EID`.
    static let eddystoneEID = hex("03 03 AA FE 0D 16 AA FE 30 F0 0123456789ABCDEF")

    /// AltBeacon (AltBeacon spec v1.0 layout), MFG ID 0x0118 (Radius Networks), beacon code BE AC,
    /// 20-octet id, reference RSSI -59 (0xC5), MFG RSVD 0x00.
    static let altBeacon = hex("1B FF 1801 BEAC 2F234454CF6D4A0FADF2F4911BA9FFA6 0001 0002 C5 00")

    /// A typical heart-rate strap (Core Supplement Part A data types): flags, incomplete 16-bit list
    /// (Heart Rate 0x180D, Battery 0x180F), appearance 0x0341 (heart rate belt), TX power +4 dBm,
    /// complete local name "Polar H7".
    static let heartRate = hex("02 01 06 05 02 0D18 0F18 03 19 4103 02 0A 04 09 09 506F6C6172204837")

    /// A 128-bit service UUID (Nordic UART 6E400001-B5A3-F393-E0A9-E50E24DCCA9E), little-endian on air,
    /// and a shortened name.
    static let nordicUART = hex("11 07 9ECADC240EE5A9E093F3A3B50100406E 05 08 4E555254")

    /// H4 bytes of one LE Advertising Report event (Core v5.4, Vol 4, Part E, §7.7.65.2) with one report.
    static func legacyEvent(
        eventType: UInt8 = 0x03, addressType: UInt8 = 0x01, address: UInt64 = 0xC0FF_EE12_3456, data: [UInt8],
        rssi: UInt8 = 0xC4
    ) -> [UInt8] {
        var w = ByteWriter()
        w.u8(eventType)
        w.u8(addressType)
        BDAddress(rawValue: address).write(to: &w)
        w.u8(UInt8(data.count))
        w.append(data)
        w.u8(rssi)
        return [0x04, 0x3E, UInt8(2 + w.bytes.count), 0x02, 0x01] + w.bytes
    }

    /// H4 bytes of one LE Extended Advertising Report event (§7.7.65.13) with one report.
    static func extendedEvent(
        eventType: UInt16 = 0x0013, address: UInt64 = 0xC0FF_EE12_3456, txPower: UInt8 = 0x7F, rssi: UInt8 = 0xC4,
        data: [UInt8]
    ) -> [UInt8] {
        var w = ByteWriter()
        w.le16(eventType)
        w.u8(0x01)
        BDAddress(rawValue: address).write(to: &w)
        w.u8(0x01)  // primary PHY LE 1M
        w.u8(0x00)  // no secondary PHY
        w.u8(0xFF)  // no SID
        w.u8(txPower)
        w.u8(rssi)
        w.le16(0)  // no periodic advertising
        w.u8(0)
        w.append([0, 0, 0, 0, 0, 0] as [UInt8])
        w.u8(UInt8(data.count))
        w.append(data)
        return [0x04, 0x3E, UInt8(2 + w.bytes.count), 0x0D, 0x01] + w.bytes
    }

    /// Decodes the reports of one H4 LE Meta event, as the gateway will.
    static func sightings(fromH4 bytes: [UInt8], timestamp: Double = 1_700_000_000.25) -> [Sighting] {
        var out: [Sighting] = []
        guard bytes.count >= 4, bytes[0] == 0x04, bytes[1] == 0x3E else { return out }
        let parameters = bytes[4...]
        switch bytes[3] {
        case 0x02:
            _ = LEAdvertisingReport.parseLegacy(parameters) { out.append(Sighting(report: $0, timestamp: timestamp)) }
        case 0x0D:
            _ = LEAdvertisingReport.parseExtended(parameters) { out.append(Sighting(report: $0, timestamp: timestamp)) }
        default: break
        }
        return out
    }
}
