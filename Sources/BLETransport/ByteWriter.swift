/// Appends little-endian (or explicitly big-endian) integers to a byte array: the writing twin of `ByteCursor`.
public struct ByteWriter: Sendable {
    public var bytes: [UInt8]

    @inlinable public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable public mutating func u8(_ v: UInt8) { bytes.append(v) }
    @inlinable public mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    @inlinable public mutating func le16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }
    @inlinable public mutating func le24(_ v: UInt32) {
        for k in 0..<3 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
    @inlinable public mutating func le32(_ v: UInt32) {
        for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
    @inlinable public mutating func le64(_ v: UInt64) {
        for k in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
    @inlinable public mutating func be16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        bytes.append(UInt8(truncatingIfNeeded: v))
    }
    @inlinable public mutating func be32(_ v: UInt32) {
        for k in (0..<4).reversed() { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
    @inlinable public mutating func be64(_ v: UInt64) {
        for k in (0..<8).reversed() { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }
    @inlinable public mutating func append<S: Sequence>(_ s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
}
