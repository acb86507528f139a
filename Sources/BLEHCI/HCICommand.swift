import BLETransport

/// Which event ends a command (Core v5.4, Vol 4, Part E, §4.4 and §7.7.14/§7.7.15).
public enum HCICommandCompletion: Sendable {
    /// Command Complete carries the outcome and return parameters.
    case commandComplete
    /// Command Status says only whether the controller accepted it; the outcome arrives later in
    /// another event (LE Connection Complete, Disconnection Complete, LE Connection Update Complete).
    case commandStatus
}

/// An HCI command: its opcode, how its parameters are laid out, and how its return parameters parse.
///
/// Each conforming type sits beside a comment quoting its section of Vol 4, Part E, §7, so the byte
/// layout can be checked against the specification line by line (as BlueZ `monitor/bt.h` does).
public protocol HCICommand: Sendable {
    associatedtype Response: Sendable = Void
    static var opcode: HCIOpcode { get }
    static var completion: HCICommandCompletion { get }
    /// Appends the command's parameters (not the opcode or length).
    func writeParameters(to w: inout ByteWriter)
    /// Parses Command Complete return parameters after the leading Status octet, which the command
    /// flow has already checked. Returns nil when they are short.
    static func parseReturnParameters(_ c: inout ByteCursor) -> Response?
}

extension HCICommand {
    public static var completion: HCICommandCompletion { .commandComplete }
    public func writeParameters(to w: inout ByteWriter) {}

    /// The command as an H4 packet: Opcode (2, little-endian), Parameter_Total_Length (1), parameters (§5.4.1).
    public var packet: H4Packet {
        var w = ByteWriter(capacity: 3 + 32)
        w.le16(Self.opcode.rawValue)
        w.u8(0)
        writeParameters(to: &w)
        precondition(w.bytes.count - 3 <= 255, "an HCI command's parameters fit in 255 octets")
        w.bytes[2] = UInt8(w.bytes.count - 3)
        return H4Packet(type: .command, payload: w.bytes)
    }

    /// Parses Command Complete return parameters, Status octet first. Returns the failing status
    /// as `.failure`, or nil when the parameters are malformed.
    public static func parseResponse(_ returnParameters: ArraySlice<UInt8>) -> Result<Response, HCIError>? {
        var c = ByteCursor(returnParameters)
        guard let status = c.readU8() else { return nil }
        guard status == 0 else { return .failure(.commandFailed(opcode, HCIStatus(rawValue: status))) }
        return parseReturnParameters(&c).map { .success($0) }
    }
}

extension HCICommand where Response == Void {
    public static func parseReturnParameters(_ c: inout ByteCursor) -> Void? { () }
}

/// A command packet taken apart: what a simulated controller or a capture reader sees (§5.4.1).
public struct HCICommandPacket: Hashable, Sendable {
    public var opcode: HCIOpcode
    public var parameters: ArraySlice<UInt8>

    public init(opcode: HCIOpcode, parameters: ArraySlice<UInt8>) {
        self.opcode = opcode
        self.parameters = parameters
    }

    /// Parses an H4 command payload (without the indicator). Nil when short or when the length octet
    /// disagrees with the bytes present.
    public static func parse(_ payload: ArraySlice<UInt8>) -> HCICommandPacket? {
        var c = ByteCursor(payload)
        guard let op = c.readLE16(), let len = c.readU8(), let params = c.readBytes(Int(len)), c.isAtEnd else {
            return nil
        }
        return HCICommandPacket(opcode: HCIOpcode(rawValue: op), parameters: params)
    }

    public var h4Packet: H4Packet {
        var w = ByteWriter(capacity: 3 + parameters.count)
        w.le16(opcode.rawValue)
        w.u8(UInt8(truncatingIfNeeded: parameters.count))
        w.append(parameters)
        return H4Packet(type: .command, payload: w.bytes)
    }
}
