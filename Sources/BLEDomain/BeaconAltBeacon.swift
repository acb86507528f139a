import BLEHCI
import BLETransport

/// AltBeacon (AltBeacon Protocol Specification v1.0, "AltBeacon Advertisement Format"), carried
/// in manufacturer specific data of any company:
///
///     1B FF <MFG ID 2, LE> BE AC <Beacon ID 20> <Reference RSSI 1> <MFG RSVD 1>
///
/// The beacon code 0xBEAC is sent as the octets BE AC. The 20-octet beacon id is opaque to the
/// protocol; by convention its first 16 octets are an organisational UUID and the last 4 two 16-bit
/// sub-ids, all big-endian.
public struct AltBeacon: Hashable, Sendable {
    /// The manufacturer that sent it (Bluetooth SIG company identifier).
    public var companyID: UInt16
    /// Octets 0…7, 8…15 and 16…19 of the beacon id, most significant first.
    public var idHigh: UInt64
    public var idMiddle: UInt64
    public var idLow: UInt32
    /// Average RSSI at 1 m, dBm.
    public var referenceRSSI: Int8
    /// Reserved for the manufacturer.
    public var manufacturerReserved: UInt8

    @usableFromInline static let beaconCode: UInt16 = 0xBEAC

    @inlinable public init(
        companyID: UInt16, idHigh: UInt64, idMiddle: UInt64, idLow: UInt32, referenceRSSI: Int8,
        manufacturerReserved: UInt8
    ) {
        self.companyID = companyID
        self.idHigh = idHigh
        self.idMiddle = idMiddle
        self.idLow = idLow
        self.referenceRSSI = referenceRSSI
        self.manufacturerReserved = manufacturerReserved
    }

    /// Parses the manufacturer data after the company id: exactly 24 octets.
    @inlinable public init?(company: UInt16, manufacturerData data: ArraySlice<UInt8>) {
        guard let b = data.withUnsafeBufferPointer({ AltBeacon(company: company, reading: ADReader($0)) }) else {
            return nil
        }
        self = b
    }

    @inlinable init?(company: UInt16, reading r: ADReader) {
        var c = r
        guard c.remaining == 24, c.readBE16() == Self.beaconCode, let h = c.readBE64(), let m = c.readBE64(),
            let l = c.readBE32(), let rssi = c.readI8(), let rsvd = c.readU8()
        else { return nil }
        self.init(
            companyID: company, idHigh: h, idMiddle: m, idLow: l, referenceRSSI: rssi, manufacturerReserved: rsvd)
    }

    /// The 20-octet beacon id.
    public var id: [UInt8] {
        var w = ByteWriter(capacity: 20)
        w.be64(idHigh)
        w.be64(idMiddle)
        w.be32(idLow)
        return w.bytes
    }

    /// Appends the id as 40 hex digits.
    @inlinable public func appendIDHex(upper: Bool = false, to out: inout [UInt8]) {
        HexDigits.append(idHigh, digits: 16, upper: upper, to: &out)
        HexDigits.append(idMiddle, digits: 16, upper: upper, to: &out)
        HexDigits.append(UInt64(idLow), digits: 8, upper: upper, to: &out)
    }

    /// The 24 octets of manufacturer data after the company id.
    public var manufacturerData: [UInt8] {
        var w = ByteWriter(capacity: 24)
        w.be16(Self.beaconCode)
        w.append(id)
        w.i8(referenceRSSI)
        w.u8(manufacturerReserved)
        return w.bytes
    }
}
