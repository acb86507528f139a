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

extension H4Packet {
    /// Whether a live source may drop this packet when the host falls behind: only advertising reports, which are
    /// samples of a radio that keeps sending. Everything else (command answers, connection events, Number Of
    /// Completed Packets, Hardware Error, ACL data) carries the host's state and is never dropped.
    ///
    /// The codes are the HCI layer's (Core v5.4, Vol 4, Part E, §7.7.65): LE Meta event 0x3E with subevent LE
    /// Advertising Report 0x02, LE Directed Advertising Report 0x0B or LE Extended Advertising Report 0x0D. They are
    /// repeated here, below that layer, because the transport's reader must decide before anything parses.
    @inlinable public var isAdvertisingReport: Bool {
        guard type == .event, payload.count >= 3, payload[0] == Self.leMetaEventCode else { return false }
        let sub = payload[2]
        return sub == Self.leAdvertisingReport || sub == Self.leDirectedAdvertisingReport
            || sub == Self.leExtendedAdvertisingReport
    }

    @usableFromInline static let leMetaEventCode: UInt8 = 0x3E
    @usableFromInline static let leAdvertisingReport: UInt8 = 0x02
    @usableFromInline static let leDirectedAdvertisingReport: UInt8 = 0x0B
    @usableFromInline static let leExtendedAdvertisingReport: UInt8 = 0x0D
}
