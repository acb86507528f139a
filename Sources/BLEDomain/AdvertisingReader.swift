/// ByteCursor's contract — bounds-checked, nil when short, never traps, byte order stated — over a
/// borrowed buffer instead of an `ArraySlice`.
///
/// Why a second cursor: decoding runs once per received advertisement (thousands a second, budget
/// 150 ns each), and every `ArraySlice` a cursor hands out retains and releases the event's storage.
/// Inside `withUnsafeBufferPointer` the same reads cost no reference counting. It is internal to
/// the decoder; everything public still takes and returns slices.
@usableFromInline struct ADReader {
    @usableFromInline let base: UnsafeBufferPointer<UInt8>
    /// Offset of the next octet within `base`.
    @usableFromInline var position: Int
    @usableFromInline let end: Int

    @inlinable init(_ base: UnsafeBufferPointer<UInt8>) {
        self.base = base
        position = 0
        end = base.count
    }

    @inlinable init(_ base: UnsafeBufferPointer<UInt8>, position: Int, end: Int) {
        self.base = base
        self.position = position
        self.end = end
    }

    @inlinable var remaining: Int { end - position }

    @inlinable mutating func readU8() -> UInt8? {
        guard position < end else { return nil }
        defer { position += 1 }
        return base[position]
    }

    @inlinable mutating func readI8() -> Int8? { readU8().map { Int8(bitPattern: $0) } }

    @inlinable mutating func readLE16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { position += 2 }
        return UInt16(base[position]) | UInt16(base[position + 1]) << 8
    }

    @inlinable mutating func readBE16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { position += 2 }
        return UInt16(base[position]) << 8 | UInt16(base[position + 1])
    }

    @inlinable mutating func readLE32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        var v: UInt32 = 0
        for k in 0..<4 { v |= UInt32(base[position + k]) << (8 * k) }
        position += 4
        return v
    }

    @inlinable mutating func readBE32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        var v: UInt32 = 0
        for k in 0..<4 { v = v << 8 | UInt32(base[position + k]) }
        position += 4
        return v
    }

    @inlinable mutating func readBE64() -> UInt64? {
        guard remaining >= 8 else { return nil }
        var v: UInt64 = 0
        for k in 0..<8 { v = v << 8 | UInt64(base[position + k]) }
        position += 8
        return v
    }

    /// The next `count` octets as a reader of their own, or nil when fewer remain.
    @inlinable mutating func readReader(_ count: Int) -> ADReader? {
        guard count >= 0, remaining >= count else { return nil }
        defer { position += count }
        return ADReader(base, position: position, end: position + count)
    }

    /// What is left, as a buffer slice.
    @inlinable mutating func readRest() -> Slice<UnsafeBufferPointer<UInt8>> {
        defer { position = end }
        return base[position..<end]
    }

    /// Whether any octet left is non-zero (zero padding after an early termination is allowed).
    @inlinable func restHasNonZero() -> Bool {
        var k = position
        while k < end {
            if base[k] != 0 { return true }
            k += 1
        }
        return false
    }
}
