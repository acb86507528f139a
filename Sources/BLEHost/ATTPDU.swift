import BLEHCI
import BLETransport

/// Why an ATT PDU could not be decoded. Each case names the PDU and the rule it broke, so a log line
/// says what the peer sent wrong.
public enum ATTPDUError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The PDU is not the one expected here.
    case wrongOpcode(expected: ATTOpcode, got: UInt8)
    /// Shorter or longer than its fixed layout allows.
    case wrongLength(ATTOpcode, count: Int)
    /// A list response with no entry (§3.4.3.2, §3.4.4.2, §3.4.4.10 all carry at least one).
    case empty(ATTOpcode)
    /// The Length field does not divide the Attribute Data List (§3.4.4.2, §3.4.4.10).
    case lengthNotDividing(ATTOpcode, length: Int, dataCount: Int)
    /// A Length field no entry of this PDU can have (e.g. a group type entry that is neither 6 nor 20).
    case unsupportedEntryLength(ATTOpcode, length: Int)
    /// Find Information Format other than 0x01 / 0x02 (§3.4.3.2).
    case unknownFormat(UInt8)
    /// §3.4.1: "The attribute handle value 0x0000 is reserved".
    case handleZero(ATTOpcode)
    /// A group whose End Group Handle precedes its Attribute Handle.
    case endBeforeStart(ATTOpcode, start: UInt16, end: UInt16)
    /// Entries out of order, or outside the range that was asked for.
    case handleOutOfRange(ATTOpcode, handle: UInt16, range: ClosedRange<UInt16>)
    /// A characteristic declaration whose value handle does not follow it inside its service
    /// (Vol 3, Part G, §3.3: the value "shall exist immediately following the characteristic declaration").
    case valueHandleOutsideService(declaration: UInt16, valueHandle: UInt16, service: ClosedRange<UInt16>)

    public var description: String {
        switch self {
        case .wrongOpcode(let e, let g): return "expected \(e.name ?? "?"), got \(ATTOpcode(g))"
        case .wrongLength(let op, let n): return "\(op.name ?? "\(op)") of wrong length \(n)"
        case .empty(let op): return "\(op.name ?? "\(op)") with no entries"
        case .lengthNotDividing(let op, let l, let n):
            return "\(op.name ?? "\(op)") length \(l) does not divide its \(n) data bytes"
        case .unsupportedEntryLength(let op, let l): return "\(op.name ?? "\(op)") entry length \(l) unsupported"
        case .unknownFormat(let f): return "Find Information Response format 0x\(hex2(f)) unknown"
        case .handleZero(let op): return "\(op.name ?? "\(op)") names handle 0x0000"
        case .endBeforeStart(let op, let s, let e):
            return "\(op.name ?? "\(op)") group 0x\(hex4(s)) ends before it starts (0x\(hex4(e)))"
        case .handleOutOfRange(let op, let h, let r):
            return "\(op.name ?? "\(op)") handle 0x\(hex4(h)) outside 0x\(hex4(r.lowerBound))–0x\(hex4(r.upperBound))"
        case .valueHandleOutsideService(let d, let v, let s):
            return "characteristic 0x\(hex4(d)) has value handle 0x\(hex4(v)) outside its service "
                + "0x\(hex4(s.lowerBound))–0x\(hex4(s.upperBound))"
        }
    }
}

/// One handle–UUID pair of a Find Information Response.
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// One Handle–Value pair of a Read By Type Response, or a notification / indication.
public struct ATTHandleValue: Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// One entry of a Read By Group Type Response.
public struct ATTGroupValue: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// The Error Response (§3.4.1.1):
///
///     Attribute Opcode 0x01 (1) | Request Opcode In Error (1) | Attribute Handle In Error (2) | Error Code (1)
public struct ATTErrorResponse: Hashable, Sendable, CustomStringConvertible {
    public var requestOpcode: ATTOpcode
    public var handle: UInt16
    public var code: ATTErrorCode

    public init(requestOpcode: ATTOpcode, handle: UInt16, code: ATTErrorCode) {
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.code = code
    }

    public var pdu: [UInt8] {
        var w = ByteWriter(capacity: 5)
        w.u8(ATTOpcode.errorResponse.rawValue)
        w.u8(requestOpcode.rawValue)
        w.le16(handle)
        w.u8(code.rawValue)
        return w.bytes
    }

    public static func decode(_ pdu: [UInt8]) throws(ATTPDUError) -> ATTErrorResponse {
        var c = try ATTPDU.body(pdu, .errorResponse)
        guard pdu.count == 5, let op = c.readU8(), let h = c.readLE16(), let code = c.readU8() else {
            throw .wrongLength(.errorResponse, count: pdu.count)
        }
        return ATTErrorResponse(requestOpcode: ATTOpcode(op), handle: h, code: ATTErrorCode(code))
    }

    public var description: String {
        "\(code) in reply to \(requestOpcode.name ?? "\(requestOpcode)") for handle 0x\(hex4(handle))"
    }
}

/// Encoders and decoders of the PDUs the client sends and receives, each beside its byte layout
/// (Core v5.4, Vol 3, Part F, §3.4). Multi-octet fields are little-endian, as everywhere in the host.
public enum ATTPDU {
    /// §3.2.8: the default and minimum ATT_MTU on an LE fixed channel.
    public static let minimumMTU = 23
    /// §3.2.9: "The maximum length of an attribute value shall be 512 octets."
    public static let maximumValueLength = 512

    /// The cursor after the opcode, once the opcode is checked.
    @usableFromInline static func body(_ pdu: [UInt8], _ op: ATTOpcode) throws(ATTPDUError) -> ByteCursor {
        var c = ByteCursor(pdu)
        guard let got = c.readU8() else { throw .wrongLength(op, count: 0) }
        guard got == op.rawValue else { throw .wrongOpcode(expected: op, got: got) }
        return c
    }

    static func appendUUID(_ uuid: BluetoothUUID, to w: inout ByteWriter) {
        if let short = uuid.uuid16 {
            w.le16(short)
        } else {
            w.le64(uuid.low)
            w.le64(uuid.high)
        }
    }

    static func uuid(_ bytes: ArraySlice<UInt8>) -> BluetoothUUID? {
        if bytes.count == 2 {
            var c = ByteCursor(bytes)
            return c.readLE16().map { BluetoothUUID(uuid16: $0) }
        }
        return BluetoothUUID(littleEndianBytes: bytes)
    }

    // MARK: Exchange MTU (§3.4.2)

    /// §3.4.2.1 `0x02 | Client Rx MTU (2)`.
    public static func exchangeMTURequest(clientRxMTU: UInt16) -> [UInt8] { op16(.exchangeMTURequest, clientRxMTU) }

    /// §3.4.2.2 `0x03 | Server Rx MTU (2)`. Returns the field as sent; the caller applies the floor of 23.
    public static func decodeExchangeMTUResponse(_ pdu: [UInt8]) throws(ATTPDUError) -> UInt16 {
        var c = try body(pdu, .exchangeMTUResponse)
        guard pdu.count == 3, let mtu = c.readLE16() else { throw .wrongLength(.exchangeMTUResponse, count: pdu.count) }
        return mtu
    }

    public static func exchangeMTUResponse(serverRxMTU: UInt16) -> [UInt8] { op16(.exchangeMTUResponse, serverRxMTU) }

    // MARK: Find Information (§3.4.3)

    /// §3.4.3.1 `0x04 | Starting Handle (2) | Ending Handle (2)`.
    public static func findInformationRequest(start: UInt16, end: UInt16) -> [UInt8] {
        var w = ByteWriter(capacity: 5)
        w.u8(ATTOpcode.findInformationRequest.rawValue)
        w.le16(start)
        w.le16(end)
        return w.bytes
    }

    /// §3.4.3.2 `0x05 | Format (1) | Information Data (4 to ATT_MTU-2)`; Format 0x01: handle + 16-bit UUID
    /// pairs, 0x02: handle + 128-bit UUID pairs. Entries must lie in `range` and ascend.
    public static func decodeFindInformationResponse(_ pdu: [UInt8], range: ClosedRange<UInt16>)
        throws(ATTPDUError) -> [ATTHandleUUID]
    {
        let op = ATTOpcode.findInformationResponse
        var c = try body(pdu, op)
        guard let format = c.readU8() else { throw .wrongLength(op, count: pdu.count) }
        let uuidLength: Int
        switch format {
        case 0x01: uuidLength = 2
        case 0x02: uuidLength = 16
        default: throw .unknownFormat(format)
        }
        let entry = 2 + uuidLength
        guard c.remaining > 0 else { throw .empty(op) }
        guard c.remaining % entry == 0 else { throw .lengthNotDividing(op, length: entry, dataCount: c.remaining) }
        var out: [ATTHandleUUID] = []
        var floor = range.lowerBound
        while let h = c.readLE16(), let u = c.readBytes(uuidLength) {
            try checkHandle(h, op, floor: floor, range: range)
            out.append(ATTHandleUUID(handle: h, uuid: uuid(u)!))
            floor = h &+ 1
        }
        return out
    }

    // MARK: Read By Type (§3.4.4.1–2)

    /// §3.4.4.1 `0x08 | Starting Handle (2) | Ending Handle (2) | Attribute Type (2 or 16)`.
    public static func readByTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID) -> [UInt8] {
        rangeTyped(.readByTypeRequest, start, end, type)
    }

    /// §3.4.4.2 `0x09 | Length (1) | Attribute Data List (2 to ATT_MTU-2)`, each entry
    /// `Attribute Handle (2) | Attribute Value (Length - 2)`. Entries must lie in `range` and ascend.
    public static func decodeReadByTypeResponse(_ pdu: [UInt8], range: ClosedRange<UInt16>)
        throws(ATTPDUError) -> [ATTHandleValue]
    {
        let op = ATTOpcode.readByTypeResponse
        var c = try body(pdu, op)
        guard let length = c.readU8().map(Int.init) else { throw .wrongLength(op, count: pdu.count) }
        guard length >= 2 else { throw .unsupportedEntryLength(op, length: length) }
        guard c.remaining > 0 else { throw .empty(op) }
        guard c.remaining % length == 0 else { throw .lengthNotDividing(op, length: length, dataCount: c.remaining) }
        var out: [ATTHandleValue] = []
        var floor = range.lowerBound
        while let h = c.readLE16(), let v = c.readBytes(length - 2) {
            try checkHandle(h, op, floor: floor, range: range)
            out.append(ATTHandleValue(handle: h, value: Array(v)))
            floor = h &+ 1
        }
        return out
    }

    // MARK: Read, Read Blob (§3.4.4.3–6)

    /// §3.4.4.3 `0x0A | Attribute Handle (2)`.
    public static func readRequest(handle: UInt16) -> [UInt8] { op16(.readRequest, handle) }

    /// §3.4.4.4 `0x0B | Attribute Value (0 to ATT_MTU-1)`.
    public static func decodeReadResponse(_ pdu: [UInt8]) throws(ATTPDUError) -> [UInt8] {
        var c = try body(pdu, .readResponse)
        return Array(c.readRest())
    }

    /// §3.4.4.5 `0x0C | Attribute Handle (2) | Value Offset (2)`.
    public static func readBlobRequest(handle: UInt16, offset: UInt16) -> [UInt8] {
        var w = ByteWriter(capacity: 5)
        w.u8(ATTOpcode.readBlobRequest.rawValue)
        w.le16(handle)
        w.le16(offset)
        return w.bytes
    }

    /// §3.4.4.6 `0x0D | Part Attribute Value (0 to ATT_MTU-1)`.
    public static func decodeReadBlobResponse(_ pdu: [UInt8]) throws(ATTPDUError) -> [UInt8] {
        var c = try body(pdu, .readBlobResponse)
        return Array(c.readRest())
    }

    // MARK: Read By Group Type (§3.4.4.9–10)

    /// §3.4.4.9 `0x10 | Starting Handle (2) | Ending Handle (2) | Attribute Group Type (2 or 16)`.
    public static func readByGroupTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID) -> [UInt8] {
        rangeTyped(.readByGroupTypeRequest, start, end, type)
    }

    /// §3.4.4.10 `0x11 | Length (1) | Attribute Data List (4 to ATT_MTU-2)`, each entry
    /// `Attribute Handle (2) | End Group Handle (2) | Attribute Value (Length - 4)`.
    /// For the service group types the value is a 16- or 128-bit UUID, so Length is 6 or 20 (Part G, §4.4.1).
    public static func decodeReadByGroupTypeResponse(_ pdu: [UInt8], range: ClosedRange<UInt16>)
        throws(ATTPDUError) -> [ATTGroupValue]
    {
        let op = ATTOpcode.readByGroupTypeResponse
        var c = try body(pdu, op)
        guard let length = c.readU8().map(Int.init) else { throw .wrongLength(op, count: pdu.count) }
        guard length >= 4 else { throw .unsupportedEntryLength(op, length: length) }
        guard c.remaining > 0 else { throw .empty(op) }
        guard c.remaining % length == 0 else { throw .lengthNotDividing(op, length: length, dataCount: c.remaining) }
        var out: [ATTGroupValue] = []
        var floor = range.lowerBound
        while let h = c.readLE16(), let e = c.readLE16(), let v = c.readBytes(length - 4) {
            try checkHandle(h, op, floor: floor, range: range)
            guard e >= h else { throw .endBeforeStart(op, start: h, end: e) }
            out.append(ATTGroupValue(handle: h, endGroupHandle: e, value: Array(v)))
            floor = e &+ 1
            if e == 0xFFFF, !c.isAtEnd { throw .handleOutOfRange(op, handle: e, range: range) }
        }
        return out
    }

    // MARK: Writes (§3.4.5)

    /// §3.4.5.1 `0x12 | Attribute Handle (2) | Attribute Value (0 to ATT_MTU-3)`.
    public static func writeRequest(handle: UInt16, value: [UInt8]) -> [UInt8] { op16(.writeRequest, handle) + value }

    /// §3.4.5.2 `0x13` alone.
    public static func decodeWriteResponse(_ pdu: [UInt8]) throws(ATTPDUError) {
        _ = try body(pdu, .writeResponse)
        guard pdu.count == 1 else { throw .wrongLength(.writeResponse, count: pdu.count) }
    }

    /// §3.4.5.3 `0x52 | Attribute Handle (2) | Attribute Value (0 to ATT_MTU-3)`.
    public static func writeCommand(handle: UInt16, value: [UInt8]) -> [UInt8] { op16(.writeCommand, handle) + value }

    // MARK: Server-initiated (§3.4.7)

    /// §3.4.7.1 `0x1B | Attribute Handle (2) | Attribute Value (0 to ATT_MTU-3)`, and §3.4.7.2 the same
    /// layout under 0x1D. `op` must be one of the two.
    public static func decodeHandleValue(_ pdu: [UInt8], _ op: ATTOpcode) throws(ATTPDUError) -> ATTHandleValue {
        var c = try body(pdu, op)
        guard let h = c.readLE16() else { throw .wrongLength(op, count: pdu.count) }
        guard h != 0 else { throw .handleZero(op) }
        return ATTHandleValue(handle: h, value: Array(c.readRest()))
    }

    public static func notification(handle: UInt16, value: [UInt8]) -> [UInt8] {
        op16(.handleValueNotification, handle) + value
    }

    public static func indication(handle: UInt16, value: [UInt8]) -> [UInt8] {
        op16(.handleValueIndication, handle) + value
    }

    /// §3.4.7.3 `0x1E` alone.
    public static let handleValueConfirmation: [UInt8] = [ATTOpcode.handleValueConfirmation.rawValue]

    // MARK: helpers

    static func op16(_ op: ATTOpcode, _ v: UInt16) -> [UInt8] { [op.rawValue, UInt8(v & 0xFF), UInt8(v >> 8)] }

    static func rangeTyped(_ op: ATTOpcode, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID) -> [UInt8] {
        var w = ByteWriter(capacity: 21)
        w.u8(op.rawValue)
        w.le16(start)
        w.le16(end)
        appendUUID(type, to: &w)
        return w.bytes
    }

    /// A handle in a list response: not 0x0000, at or after `floor` (entries ascend) and inside the range asked for.
    static func checkHandle(_ h: UInt16, _ op: ATTOpcode, floor: UInt16, range: ClosedRange<UInt16>)
        throws(ATTPDUError)
    {
        guard h != 0 else { throw .handleZero(op) }
        guard h >= floor, range.contains(h) else { throw .handleOutOfRange(op, handle: h, range: range) }
    }
}
