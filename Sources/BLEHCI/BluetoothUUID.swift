import BLETransport

/// A Bluetooth UUID held as 16 bytes in the order people print them (big-endian), in two words so
/// that it is a fixed-size value: comparing or hashing one never allocates.
///
/// 16- and 32-bit UUIDs are aliases inside the Bluetooth Base UUID
/// 00000000-0000-1000-8000-00805F9B34FB (Core v5.4, Vol 3, Part B, §2.5.1): `uuid16 << 96 + base`.
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Bytes 0…7 as printed.
    public var high: UInt64
    /// Bytes 8…15 as printed.
    public var low: UInt64

    /// The Base UUID's bytes beside the 32-bit alias: 0000-1000 | 8000-00805F9B34FB.
    @usableFromInline static let baseHighLow32: UInt64 = 0x0000_1000
    @usableFromInline static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    @inlinable public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A 16-bit alias, e.g. 0xFEAA (Eddystone).
    @inlinable public init(uuid16: UInt16) { self.init(uuid32: UInt32(uuid16)) }

    /// A 32-bit alias.
    @inlinable public init(uuid32: UInt32) {
        self.init(high: UInt64(uuid32) << 32 | Self.baseHighLow32, low: Self.baseLow)
    }

    /// Sixteen bytes, most significant first (as printed; as iBeacon sends its proximity UUID).
    @inlinable public init?(bigEndianBytes b: ArraySlice<UInt8>) {
        var c = ByteCursor(b)
        guard b.count == 16, let h = c.readBE64(), let l = c.readBE64() else { return nil }
        self.init(high: h, low: l)
    }

    /// Sixteen bytes, least significant first: how AD structures and ATT carry 128-bit UUIDs
    /// (Core Specification Supplement, Part A, §1.1: "multi-octet fields … little-endian").
    @inlinable public init?(littleEndianBytes b: ArraySlice<UInt8>) {
        var c = ByteCursor(b)
        guard b.count == 16, let l = c.readLE64(), let h = c.readLE64() else { return nil }
        self.init(high: h, low: l)
    }

    /// The 32-bit alias when this UUID lies in the Base UUID range.
    @inlinable public var uuid32: UInt32? {
        guard low == Self.baseLow, high & 0xFFFF_FFFF == Self.baseHighLow32 else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    /// The 16-bit alias when this UUID is one.
    @inlinable public var uuid16: UInt16? {
        guard let v = uuid32, v <= 0xFFFF else { return nil }
        return UInt16(v)
    }

    /// Parses "FEAA", "0000FEAA", "0xFEAA" or the 36-character form (case-insensitive; dashes optional
    /// in the 128-bit form).
    public init?(_ text: some StringProtocol) {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        let hex = s.filter { $0 != "-" }
        guard hex.allSatisfy(\.isHexDigit) else { return nil }
        switch hex.count {
        case 4 where !s.contains("-"):
            guard let v = UInt16(hex, radix: 16) else { return nil }
            self.init(uuid16: v)
        case 8 where !s.contains("-"):
            guard let v = UInt32(hex, radix: 16) else { return nil }
            self.init(uuid32: v)
        case 32:
            if s.contains("-") {
                // Only the canonical 8-4-4-4-12 grouping.
                let groups = s.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
                guard groups == [8, 4, 4, 4, 12] else { return nil }
            }
            guard let h = UInt64(hex.prefix(16), radix: 16), let l = UInt64(hex.suffix(16), radix: 16) else {
                return nil
            }
            self.init(high: h, low: l)
        default:
            return nil
        }
    }

    /// Appends the printed form: "FEAA" for a 16-bit alias, "0000FEAA"-style 8 digits for a 32-bit
    /// alias, otherwise "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0". Upper case, as the Core spec prints them.
    @inlinable public func appendDescription(to out: inout [UInt8]) {
        if let v = uuid32 {
            HexDigits.append(UInt64(v), digits: v <= 0xFFFF ? 4 : 8, upper: true, to: &out)
            return
        }
        appendLongDescription(to: &out)
    }

    /// Always the 36-character form.
    @inlinable public func appendLongDescription(to out: inout [UInt8]) {
        HexDigits.append(high >> 32, digits: 8, upper: true, to: &out)
        out.append(UInt8(ascii: "-"))
        HexDigits.append(high >> 16, digits: 4, upper: true, to: &out)
        out.append(UInt8(ascii: "-"))
        HexDigits.append(high, digits: 4, upper: true, to: &out)
        out.append(UInt8(ascii: "-"))
        HexDigits.append(low >> 48, digits: 4, upper: true, to: &out)
        out.append(UInt8(ascii: "-"))
        HexDigits.append(low, digits: 12, upper: true, to: &out)
    }

    public var description: String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        appendDescription(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func < (a: BluetoothUUID, b: BluetoothUUID) -> Bool { (a.high, a.low) < (b.high, b.low) }
}
