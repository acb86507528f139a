import BLETransport

/// The header of an HCI ACL data packet (Core v5.4, Vol 4, Part E, §5.4.2):
/// Handle (12 bits) | Packet_Boundary_Flag (2 bits) | Broadcast_Flag (2 bits), little-endian,
/// then Data_Total_Length (2).
public struct ACLHeader: Hashable, Sendable {
    /// Packet_Boundary_Flag: 0b00 first non-flushable (host → controller), 0b01 continuing fragment,
    /// 0b10 first automatically flushable fragment.
    public struct PacketBoundary: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0x3 }
        public static let firstNonFlushable = PacketBoundary(rawValue: 0b00)
        public static let continuing = PacketBoundary(rawValue: 0b01)
        public static let firstFlushable = PacketBoundary(rawValue: 0b10)
    }

    public var handle: UInt16
    public var packetBoundary: PacketBoundary
    /// Broadcast_Flag: 0b00 point-to-point (the only value on LE).
    public var broadcast: UInt8
    public var dataLength: UInt16

    public static let size = 4

    public init(handle: UInt16, packetBoundary: PacketBoundary, broadcast: UInt8 = 0, dataLength: UInt16) {
        self.handle = handle & 0x0FFF
        self.packetBoundary = packetBoundary
        self.broadcast = broadcast & 0x3
        self.dataLength = dataLength
    }

    public static func read(from c: inout ByteCursor) -> ACLHeader? {
        guard let hf = c.readLE16(), let len = c.readLE16() else { return nil }
        return ACLHeader(
            handle: hf & 0x0FFF, packetBoundary: PacketBoundary(rawValue: UInt8(hf >> 12)),
            broadcast: UInt8(hf >> 14), dataLength: len)
    }

    public func write(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcast) << 14)
        w.le16(dataLength)
    }
}

/// An ACL data packet taken apart; `data` is a slice of the packet, not a copy.
public struct ACLDataPacket: Sendable {
    public var header: ACLHeader
    public var data: ArraySlice<UInt8>

    public init(header: ACLHeader, data: ArraySlice<UInt8>) {
        self.header = header
        self.data = data
    }

    /// Parses an H4 ACL payload. Nil when short or when Data_Total_Length disagrees with the bytes present.
    public static func parse(_ payload: ArraySlice<UInt8>) -> ACLDataPacket? {
        var c = ByteCursor(payload)
        guard let h = ACLHeader.read(from: &c), let data = c.readBytes(Int(h.dataLength)), c.isAtEnd else {
            return nil
        }
        return ACLDataPacket(header: h, data: data)
    }

    /// Builds the H4 packet for a fragment; the header's length is set from `data`.
    public static func build(handle: UInt16, packetBoundary: ACLHeader.PacketBoundary, data: some Collection<UInt8>)
        -> H4Packet
    {
        var w = ByteWriter(capacity: ACLHeader.size + data.count)
        ACLHeader(handle: handle, packetBoundary: packetBoundary, dataLength: UInt16(data.count)).write(to: &w)
        w.append(data)
        return H4Packet(type: .acl, payload: w.bytes)
    }
}
