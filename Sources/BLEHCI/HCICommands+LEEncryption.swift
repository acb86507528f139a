import BLETransport

// The peripheral's side of LE encryption: the central starts it, the controller asks the host for the key.
// Section numbers are Core v5.4, Vol 4, Part E.

/// §7.8.25 HCI_LE_Long_Term_Key_Request_Reply. Command parameters: Connection_Handle (2), Long_Term_Key (16,
/// least significant octet first). Return parameters: Status (1), Connection_Handle (2).
public struct LELongTermKeyRequestReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leLongTermKeyRequestReply
    public var handle: UInt16
    /// Most significant octet first, as the security functions give it; reversed onto the wire.
    public var longTermKey: [UInt8]

    public init(handle: UInt16, longTermKey: [UInt8]) {
        precondition(longTermKey.count == 16, "a Long Term Key is 128 bits")
        self.handle = handle
        self.longTermKey = longTermKey
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle)
        w.append(longTermKey.reversed())
    }

    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16() }
}

/// §7.8.26 HCI_LE_Long_Term_Key_Request_Negative_Reply: no key for this link. Command parameters:
/// Connection_Handle (2). Return parameters: Status (1), Connection_Handle (2).
public struct LELongTermKeyRequestNegativeReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leLongTermKeyRequestNegativeReply
    public var handle: UInt16
    public init(handle: UInt16) { self.handle = handle }
    public func writeParameters(to w: inout ByteWriter) { w.le16(handle) }
    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16() }
}
