/// Splits an H4 byte stream (UART, Unix or TCP socket, raw H4 capture) into packets.
///
/// An incremental parser with no I/O: feed it bytes as they arrive, take packets out. After
/// garbage (an unknown indicator, or a header announcing more than `maxPayload` bytes) it drops
/// one byte and looks for the next plausible indicator, counting what it skipped; it never traps
/// and never stalls. (SwiftNIO's `WSParser`: the parser is a struct, the I/O loop forwards.)
public struct H4Deframer: Sendable {
    /// Header sizes after the indicator, and where the payload length sits inside the header
    /// (Core v5.4, Vol 4, Part E, §5.4: command 3 bytes, ACL 4, SCO 3, event 2, ISO 4).
    @usableFromInline static func header(for type: UInt8) -> (size: Int, lengthOffset: Int, lengthBytes: Int)? {
        switch type {
        case 0x01: (3, 2, 1)
        case 0x02: (4, 2, 2)
        case 0x03: (3, 2, 1)
        case 0x04: (2, 1, 1)
        case 0x05: (4, 2, 2)
        default: nil
        }
    }

    /// Packets whose header announces more than this are treated as garbage, not awaited.
    public var maxPayload: Int
    /// Bytes dropped while resynchronising.
    public private(set) var garbageBytes = 0
    /// Headers that announced more than `maxPayload` (each also counted in `garbageBytes`).
    public private(set) var oversizedHeaders = 0
    /// Complete packets delivered.
    public private(set) var packets = 0

    @usableFromInline var buffer: [UInt8] = []
    @usableFromInline var start = 0

    public init(maxPayload: Int = 65535 + 4) {
        self.maxPayload = maxPayload
        buffer.reserveCapacity(4096)
    }

    /// Bytes received but not yet part of a complete packet.
    public var pendingBytes: Int { buffer.count - start }

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete packet, or nil when more bytes are needed.
    public mutating func next() -> H4Packet? {
        while start < buffer.count {
            let indicator = buffer[start]
            guard let h = Self.header(for: indicator) else {
                start += 1
                garbageBytes += 1
                continue
            }
            let available = buffer.count - start - 1
            guard available >= h.size else { return nil }
            let lo = start + 1 + h.lengthOffset
            var length = Int(buffer[lo])
            if h.lengthBytes == 2 { length |= Int(buffer[lo + 1]) << 8 }
            if indicator == H4PacketType.iso.rawValue { length &= 0x3FFF }  // ISO: 14-bit data total length
            guard length <= maxPayload else {
                oversizedHeaders += 1
                garbageBytes += 1
                start += 1
                continue
            }
            let total = h.size + length
            guard available >= total else { return nil }
            let payload = Array(buffer[(start + 1)..<(start + 1 + total)])
            start += 1 + total
            packets += 1
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            return H4Packet(type: H4PacketType(rawValue: indicator), payload: payload)
        }
        return nil
    }
}
