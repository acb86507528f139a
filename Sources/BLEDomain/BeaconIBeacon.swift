import BLEHCI
import BLETransport

/// Apple iBeacon, carried in manufacturer specific data (Proximity Beacon Specification R1, "iBeacon
/// Advertising Packet"): after company 0x004C, `02 15` (type, length 21), then the proximity UUID,
/// major and minor — all three big-endian, unlike the rest of Bluetooth — and the measured power
/// at one metre as a signed octet.
///
///     1A FF 4C 00 02 15 <UUID 16> <major 2> <minor 2> <power 1>
public struct IBeacon: Hashable, Sendable {
    public var proximityUUID: BluetoothUUID
    public var major: UInt16
    public var minor: UInt16
    /// Calibrated RSSI at 1 m, dBm.
    public var measuredPower: Int8

    public static let appleCompanyID: UInt16 = 0x004C
    @usableFromInline static let type: UInt8 = 0x02
    @usableFromInline static let length: UInt8 = 0x15

    @inlinable public init(proximityUUID: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8) {
        self.proximityUUID = proximityUUID
        self.major = major
        self.minor = minor
        self.measuredPower = measuredPower
    }

    /// Parses the manufacturer data after the company id. Extra trailing octets are tolerated (some
    /// beacons append a byte); a short or differently typed payload is not an iBeacon.
    @inlinable public init?(manufacturerData data: ArraySlice<UInt8>) {
        guard let b = data.withUnsafeBufferPointer({ IBeacon(reading: ADReader($0)) }) else { return nil }
        self = b
    }

    @inlinable init?(reading r: ADReader) {
        var c = r
        guard c.readU8() == Self.type, c.readU8() == Self.length, let h = c.readBE64(), let l = c.readBE64(),
            let major = c.readBE16(), let minor = c.readBE16(), let power = c.readI8()
        else { return nil }
        self.init(proximityUUID: BluetoothUUID(high: h, low: l), major: major, minor: minor, measuredPower: power)
    }

    /// The 23 octets of manufacturer data after the company id (for encoders, the simulator, tests).
    public var manufacturerData: [UInt8] {
        var w = ByteWriter(capacity: 23)
        w.u8(Self.type)
        w.u8(Self.length)
        w.be64(proximityUUID.high)
        w.be64(proximityUUID.low)
        w.be16(major)
        w.be16(minor)
        w.i8(measuredPower)
        return w.bytes
    }
}
