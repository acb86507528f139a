import BLETransport

/// A 48-bit Bluetooth device address, kept as the wire carries it (little-endian: the first byte
/// on the wire is the least significant) and printed most significant byte first, as people write it.
public struct BDAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 48 address bits; bits 47…46 of a random address say which kind it is.
    public let rawValue: UInt64

    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Parses "AA:BB:CC:DD:EE:FF" (or with '-' or without separators), most significant first.
    public init?(_ text: some StringProtocol) {
        let hex = String(text.filter { $0 != ":" && $0 != "-" })
        guard hex.count == 12, let v = UInt64(hex, radix: 16) else { return nil }
        self.init(rawValue: v)
    }

    /// Reads six bytes, least significant first.
    @inlinable public static func read(from cursor: inout ByteCursor) -> BDAddress? {
        guard let lo = cursor.readLE32(), let hi = cursor.readLE16() else { return nil }
        return BDAddress(rawValue: UInt64(hi) << 32 | UInt64(lo))
    }

    @inlinable public func write(to w: inout ByteWriter) {
        w.le32(UInt32(truncatingIfNeeded: rawValue))
        w.le16(UInt16(truncatingIfNeeded: rawValue >> 32))
    }

    /// Appends "AA:BB:CC:DD:EE:FF" (17 bytes) without making a String: the JSON lines write one per report.
    @inlinable public func appendDescription(to out: inout [UInt8]) {
        let v = rawValue
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 17) { b in
            for i in 0..<6 {
                let byte = UInt8(truncatingIfNeeded: v >> (UInt64(5 - i) * 8))
                b[i * 3] = Self.hexDigit(byte >> 4)
                b[i * 3 + 1] = Self.hexDigit(byte & 0xF)
                if i < 5 { b[i * 3 + 2] = UInt8(ascii: ":") }
            }
            out.append(contentsOf: UnsafeBufferPointer(b))
        }
    }

    @inlinable static func hexDigit(_ n: UInt8) -> UInt8 { n < 10 ? UInt8(ascii: "0") + n : UInt8(ascii: "A") - 10 + n }

    /// "AA:BB:CC:DD:EE:FF".
    public var description: String {
        var out = [UInt8]()
        out.reserveCapacity(17)
        appendDescription(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// "aabbccddeeff": the form used in MQTT topics (only characters the gateway formats itself).
    public var topicComponent: String {
        var out = [UInt8]()
        out.reserveCapacity(12)
        HexDigits.append(rawValue, digits: 12, upper: false, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func < (a: BDAddress, b: BDAddress) -> Bool { a.rawValue < b.rawValue }
}

/// The address type carried in LE events and commands (Core v5.4, Vol 4, Part E, §7.7.65.2).
public struct LEAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let `public` = LEAddressType(rawValue: 0x00)
    public static let random = LEAddressType(rawValue: 0x01)
    /// Resolved by the controller from a resolvable private address to a public identity.
    public static let publicIdentity = LEAddressType(rawValue: 0x02)
    public static let randomIdentity = LEAddressType(rawValue: 0x03)
    /// Extended reports only: no address was provided (anonymous advertising).
    public static let anonymous = LEAddressType(rawValue: 0xFF)

    /// The name as a static string, for writers that copy bytes (nil for a value without a name).
    public var staticName: StaticString? {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public-identity"
        case .randomIdentity: "random-identity"
        case .anonymous: "anonymous"
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public-identity"
        case .randomIdentity: "random-identity"
        case .anonymous: "anonymous"
        default: "address-type(0x\(String(rawValue, radix: 16)))"
        }
    }
}
