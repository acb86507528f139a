/// A 48-bit Bluetooth device address, kept as the wire carries it (little-endian: the first byte
/// on the wire is the least significant) and printed most significant byte first, as people write it.
public struct BDAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 48 address bits; bits 47…46 of a random address say which kind it is.
    public let rawValue: UInt64

    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Parses "AA:BB:CC:DD:EE:FF", most significant byte first, in either case: the form btmon, `hciconfig` and the
    /// specification print. Also "AA-BB-CC-DD-EE-FF" and the twelve digits alone ("aabbccddeeff", the topics' form).
    /// The project's one address parser: nil for anything else.
    public init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        var v: UInt64 = 0
        switch utf8.count {
        case 12:
            for c in utf8 {
                guard let n = HexDigits.nibble(c) else { return nil }
                v = v << 4 | UInt64(n)
            }
        case 17:
            let separator = utf8[utf8.index(utf8.startIndex, offsetBy: 2)]
            guard separator == UInt8(ascii: ":") || separator == UInt8(ascii: "-") else { return nil }
            for (n, c) in utf8.enumerated() {
                if n % 3 == 2 {
                    guard c == separator else { return nil }
                } else {
                    guard let d = HexDigits.nibble(c) else { return nil }
                    v = v << 4 | UInt64(d)
                }
            }
        default: return nil
        }
        self.init(rawValue: v)
    }

    /// Six bytes, least significant first (`bdaddr_t`, and the order on the air); nil for another count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 6 else { return nil }
        self.init(rawValue: bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// The six bytes, least significant first.
    public var bytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) } }

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

    /// The inverse of `topicComponent`: twelve hex digits and nothing else.
    public init?(topicComponent: some StringProtocol) {
        guard let v = HexDigits.number(topicComponent, digits: 12) else { return nil }
        self.init(rawValue: v)
    }

    public static func < (a: BDAddress, b: BDAddress) -> Bool { a.rawValue < b.rawValue }
}
