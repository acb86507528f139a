/// The H4 packet indicator (Bluetooth Core v5.4, Vol 4, Part A, §2 "Protocol"): the byte that
/// precedes each HCI packet on a UART, and on Linux HCI_CHANNEL_USER sockets.
/// An open set: an unknown indicator is kept and printed by number.
public struct H4PacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let command = H4PacketType(rawValue: 0x01)
    public static let acl = H4PacketType(rawValue: 0x02)
    public static let sco = H4PacketType(rawValue: 0x03)
    public static let event = H4PacketType(rawValue: 0x04)
    public static let iso = H4PacketType(rawValue: 0x05)

    public var description: String {
        switch self {
        case .command: "command"
        case .acl: "acl"
        case .sco: "sco"
        case .event: "event"
        case .iso: "iso"
        default: "h4(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// One HCI packet with its H4 indicator; `payload` excludes the indicator byte.
public struct H4Packet: Hashable, Sendable {
    public var type: H4PacketType
    public var payload: [UInt8]

    @inlinable public init(type: H4PacketType, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// Indicator followed by payload, as written to a UART or a user-channel socket.
    @inlinable public var h4Bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(payload.count + 1)
        out.append(type.rawValue)
        out.append(contentsOf: payload)
        return out
    }
}
