import BLEHCI
import BLETransport

/// Up to 24 octets held inline, so that beacon values carrying a few bytes (an Eddystone URL, an
/// encrypted TLM) stay trivially copyable: copying a `Sighting` is then a memcpy plus one retain of
/// the report's bytes, which is what keeps decoding under its time budget.
public struct ShortBytes: RandomAccessCollection, Hashable, Sendable, CustomStringConvertible {
    public static let capacity = 24
    @usableFromInline var w0: UInt64 = 0
    @usableFromInline var w1: UInt64 = 0
    @usableFromInline var w2: UInt64 = 0
    @usableFromInline var n: UInt8 = 0

    /// Nil when `bytes` holds more than `capacity` octets.
    @inlinable public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count <= Self.capacity else { return nil }
        for (i, b) in bytes.enumerated() {
            let shift = UInt64((i & 7) * 8)
            switch i >> 3 {
            case 0: w0 |= UInt64(b) << shift
            case 1: w1 |= UInt64(b) << shift
            default: w2 |= UInt64(b) << shift
            }
        }
        n = UInt8(bytes.count)
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { Int(n) }

    @inlinable public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < Int(n), "ShortBytes index out of range")
        let w = i < 8 ? w0 : i < 16 ? w1 : w2
        return UInt8(truncatingIfNeeded: w >> UInt64((i & 7) * 8))
    }

    public var description: String { HexDigits.string(self) }
}
