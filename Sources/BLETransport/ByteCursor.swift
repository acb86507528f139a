/// A bounds-checked reader over bytes that never copies and always says its byte order.
///
/// Every Bluetooth wire format the gateway reads (H4, HCI, L2CAP, ATT, AD structures, btsnoop's
/// big-endian records) is parsed through this cursor. A read that would run past the end returns
/// `nil` and leaves the cursor where it was, so a short packet can never trap.
/// (BlueZ `util_iov_pull_le16`; SwiftNIO `ByteBuffer.readInteger(endianness:)`.)
public struct ByteCursor: Sendable {
    /// The bytes not yet read. Slicing an `ArraySlice` shares storage; nothing is copied.
    @inlinable public var rest: ArraySlice<UInt8> { _rest }
    @usableFromInline var _rest: ArraySlice<UInt8>

    @inlinable public init(_ bytes: ArraySlice<UInt8>) { self._rest = bytes }
    @inlinable public init(_ bytes: [UInt8]) { self._rest = bytes[...] }

    @inlinable public var remaining: Int { rest.count }
    @inlinable public var isAtEnd: Bool { rest.isEmpty }

    @inlinable public mutating func readU8() -> UInt8? {
        guard let b = rest.first else { return nil }
        _rest = _rest.dropFirst()
        return b
    }

    @inlinable public mutating func readI8() -> Int8? {
        readU8().map { Int8(bitPattern: $0) }
    }

    @inlinable public mutating func readLE16() -> UInt16? {
        guard rest.count >= 2 else { return nil }
        let i = rest.startIndex
        let v = UInt16(rest[i]) | UInt16(rest[i + 1]) << 8
        _rest = _rest[(i + 2)...]
        return v
    }

    @inlinable public mutating func readLE24() -> UInt32? {
        guard rest.count >= 3 else { return nil }
        let i = rest.startIndex
        let v = UInt32(rest[i]) | UInt32(rest[i + 1]) << 8 | UInt32(rest[i + 2]) << 16
        _rest = _rest[(i + 3)...]
        return v
    }

    @inlinable public mutating func readLE32() -> UInt32? {
        guard rest.count >= 4 else { return nil }
        let i = rest.startIndex
        var v: UInt32 = 0
        for k in 0..<4 { v |= UInt32(rest[i + k]) << (8 * k) }
        _rest = _rest[(i + 4)...]
        return v
    }

    @inlinable public mutating func readLE64() -> UInt64? {
        guard rest.count >= 8 else { return nil }
        let i = rest.startIndex
        var v: UInt64 = 0
        for k in 0..<8 { v |= UInt64(rest[i + k]) << (8 * k) }
        _rest = _rest[(i + 8)...]
        return v
    }

    @inlinable public mutating func readBE16() -> UInt16? {
        guard rest.count >= 2 else { return nil }
        let i = rest.startIndex
        let v = UInt16(rest[i]) << 8 | UInt16(rest[i + 1])
        _rest = _rest[(i + 2)...]
        return v
    }

    @inlinable public mutating func readBE32() -> UInt32? {
        guard rest.count >= 4 else { return nil }
        let i = rest.startIndex
        var v: UInt32 = 0
        for k in 0..<4 { v = v << 8 | UInt32(rest[i + k]) }
        _rest = _rest[(i + 4)...]
        return v
    }

    @inlinable public mutating func readBE64() -> UInt64? {
        guard rest.count >= 8 else { return nil }
        let i = rest.startIndex
        var v: UInt64 = 0
        for k in 0..<8 { v = v << 8 | UInt64(rest[i + k]) }
        _rest = _rest[(i + 8)...]
        return v
    }

    /// The next `count` bytes as a slice of the same storage, or nil when fewer remain.
    @inlinable public mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, rest.count >= count else { return nil }
        let i = rest.startIndex
        let out = rest[i..<(i + count)]
        _rest = _rest[(i + count)...]
        return out
    }

    /// Everything that is left.
    @inlinable public mutating func readRest() -> ArraySlice<UInt8> {
        let out = rest
        _rest = _rest[rest.endIndex...]
        return out
    }

    @inlinable @discardableResult public mutating func skip(_ count: Int) -> Bool {
        readBytes(count) != nil
    }
}
