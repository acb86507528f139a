import BLEHCI
import BLETransport

/// An L2CAP channel identifier (Core v5.4, Vol 3, Part A, §2.1). An open set: unknown values print by number.
public struct L2CAPChannelID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// §2.1 Table 2.3, the LE-U fixed channels this host serves.
    public static let att = L2CAPChannelID(rawValue: 0x0004)
    public static let leSignaling = L2CAPChannelID(rawValue: 0x0005)
    public static let securityManager = L2CAPChannelID(rawValue: 0x0006)

    public var description: String {
        let hex = "0x" + upperHex(rawValue, digits: 4)
        switch self {
        case .att: return "\(hex) ATT"
        case .leSignaling: return "\(hex) LE signaling"
        case .securityManager: return "\(hex) SMP"
        default: return hex
        }
    }
}

/// An L2CAP basic frame, B-frame (Vol 3, Part A, §3.1): Length (2) | Channel ID (2) | Information payload,
/// little-endian; Length counts the payload only.
public struct L2CAPFrame: Hashable, Sendable {
    public static let headerSize = 4

    public var channel: L2CAPChannelID
    public var payload: [UInt8]

    public init(channel: L2CAPChannelID, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }

    /// The largest payload a Length field can announce.
    public static let maximumPayload = Int(UInt16.max)

    /// Parses a whole frame; nil when short or when Length disagrees with the bytes present.
    public static func parse(_ bytes: ArraySlice<UInt8>) -> L2CAPFrame? {
        var c = ByteCursor(bytes)
        guard let length = c.readLE16(), let cid = c.readLE16(), let payload = c.readBytes(Int(length)), c.isAtEnd
        else { return nil }
        return L2CAPFrame(channel: L2CAPChannelID(rawValue: cid), payload: Array(payload))
    }

    /// The frame's bytes. The payload must fit Length (at most `maximumPayload`).
    public var bytes: [UInt8] {
        precondition(payload.count <= Self.maximumPayload, "L2CAP payload over 65535 octets")
        var w = ByteWriter(capacity: Self.headerSize + payload.count)
        w.le16(UInt16(payload.count))
        w.le16(channel.rawValue)
        w.append(payload)
        return w.bytes
    }
}
