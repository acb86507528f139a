import BLEHCI
import BLETransport

/// The small GATT database a gateway serves to a phone while it enrols (Core v5.4, Vol 3, Part F for ATT, Part G for
/// GATT): a pure ATT server (a request in, its response out; no I/O).
///
/// iOS starts no pairing of its own accord: it pairs when the peripheral asks (an SMP Security Request, which
/// `PeripheralPairings` sends as the link opens) or when reading an attribute is refused for want of security (Error
/// Response, Insufficient Authentication). So besides the Generic Access service, the database has the Heart Rate
/// service the advertising names, with its Body Sensor Location readable only over an encrypted link: a phone that
/// reads it before pairing is told to pair, as ESPresense's enrolment does.
public struct EnrolmentGATTServer: Sendable {
    struct Attribute: Sendable {
        var handle: UInt16
        var type: UInt16
        var value: [UInt8]
        /// Read only over an encrypted link.
        var encrypted = false
        /// A service declaration: the last handle of its group.
        var groupEnd: UInt16?
    }

    /// Attribute types (Assigned Numbers §3.5–3.8) and the characteristics served (§3.8).
    static let primaryService: UInt16 = 0x2800
    static let characteristic: UInt16 = 0x2803
    static let genericAccess: UInt16 = 0x1800
    static let deviceName: UInt16 = 0x2A00
    static let appearance: UInt16 = 0x2A01
    static let heartRate: UInt16 = 0x180D
    static let bodySensorLocation: UInt16 = 0x2A38
    /// Body Sensor Location 0x01 "Chest" (Heart Rate Service §3.2).
    static let chest: UInt8 = 0x01
    /// Characteristic Properties: Read (Part G, §3.3.1.1).
    static let read: UInt8 = GATTCharacteristicProperties.read.rawValue
    /// ATT_MTU: the default for LE (Part F, §3.2.8), all this server needs; it answers Exchange MTU with it.
    static let mtu: UInt16 = 23

    let attributes: [Attribute]
    public private(set) var encrypted = false

    /// - Parameters:
    ///   - name: the Device Name (what the advertising calls the gateway), cut to what one Read Response carries.
    ///   - appearance: the Appearance the advertising gives.
    public init(name: String, appearance: UInt16) {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let nameBytes = Array(Array(name.utf8).prefix(Int(Self.mtu) - 1))
        attributes = [
            Attribute(handle: 1, type: Self.primaryService, value: le(Self.genericAccess), groupEnd: 5),
            Attribute(handle: 2, type: Self.characteristic, value: [Self.read] + le(3) + le(Self.deviceName)),
            Attribute(handle: 3, type: Self.deviceName, value: nameBytes),
            Attribute(handle: 4, type: Self.characteristic, value: [Self.read] + le(5) + le(Self.appearance)),
            Attribute(handle: 5, type: Self.appearance, value: le(appearance)),
            Attribute(handle: 6, type: Self.primaryService, value: le(Self.heartRate), groupEnd: 8),
            Attribute(handle: 7, type: Self.characteristic, value: [Self.read] + le(8) + le(Self.bodySensorLocation)),
            Attribute(handle: 8, type: Self.bodySensorLocation, value: [Self.chest], encrypted: true),
        ]
    }

    /// Encryption Change on the link (Vol 4, Part E, §7.7.8).
    public mutating func encryptionChanged(on: Bool) { encrypted = on }

    /// An ATT PDU from the phone: the response to send, or nil for a PDU that takes none (a command, a confirmation,
    /// a response to a request of ours, of which we make none).
    public func received(_ pdu: [UInt8]) -> [UInt8]? {
        var c = ByteCursor(pdu)
        guard let raw = c.readU8() else { return nil }
        let opcode = ATTOpcode(raw)
        // Part F, §3.3.1: bit 6 is the Command Flag; commands are never answered.
        if opcode.isCommand || opcode == .handleValueConfirmation || ATTOpcode.requestsByResponse[opcode] != nil {
            return nil
        }
        switch opcode {
        case .exchangeMTURequest:
            guard c.readLE16() != nil else { return error(opcode, 0, .invalidPDU) }
            return [ATTOpcode.exchangeMTUResponse.rawValue] + le(Self.mtu)
        case .readByGroupTypeRequest:
            guard let (start, end) = range(&c) else { return error(opcode, 0, .invalidPDU) }
            guard let type = uuid16(c.readRest()) else { return error(opcode, start, .invalidPDU) }
            return readByGroupType(start, end, type)
        case .readByTypeRequest:
            guard let (start, end) = range(&c) else { return error(opcode, 0, .invalidPDU) }
            guard let type = uuid16(c.readRest()) else { return error(opcode, start, .invalidPDU) }
            return readByType(start, end, type)
        case .findInformationRequest:
            guard let (start, end) = range(&c) else { return error(opcode, 0, .invalidPDU) }
            return findInformation(start, end)
        case .readRequest:
            guard let handle = c.readLE16() else { return error(opcode, 0, .invalidPDU) }
            return read(opcode, handle, offset: 0)
        case .readBlobRequest:
            guard let handle = c.readLE16(), let offset = c.readLE16() else { return error(opcode, 0, .invalidPDU) }
            return read(opcode, handle, offset: Int(offset))
        default:
            return error(opcode, 0, .requestNotSupported)
        }
    }

    // MARK: Requests

    /// An Attribute Type of 2 or 16 octets: a 16-bit UUID, or `.some(nil)` for a 128-bit one, which names nothing
    /// here (every attribute of this database is a 16-bit UUID); nil for any other length.
    private func uuid16(_ b: ArraySlice<UInt8>) -> UInt16?? {
        var c = ByteCursor(b)
        switch b.count {
        case 2: return .some(c.readLE16())
        case 16: return .some(nil)
        default: return nil
        }
    }

    /// Starting and Ending Handle; a range with Starting Handle 0 or greater than the Ending Handle is refused with
    /// Invalid Handle (§3.4.3.1 and alike), which `invalid` tells.
    private func range(_ c: inout ByteCursor) -> (UInt16, UInt16)? {
        guard let start = c.readLE16(), let end = c.readLE16() else { return nil }
        return (start, end)
    }

    private func invalid(_ start: UInt16, _ end: UInt16) -> Bool { start == 0 || start > end }

    private func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: UInt16?) -> [UInt8] {
        let opcode = ATTOpcode.readByGroupTypeRequest
        if invalid(start, end) { return error(opcode, start, .invalidHandle) }
        // §3.4.4.9: only «Primary Service» and «Secondary Service» group; this database has primary ones alone.
        guard type == Self.primaryService else { return error(opcode, start, .unsupportedGroupType) }
        let found = attributes.filter { $0.type == type && (start...end).contains($0.handle) }
        guard !found.isEmpty else { return error(opcode, start, .attributeNotFound) }
        // Every entry is Handle(2) End Group Handle(2) a 16-bit UUID(2): as many as the MTU takes.
        let fit = (Int(Self.mtu) - 2) / 6
        var out: [UInt8] = [ATTOpcode.readByGroupTypeResponse.rawValue, 6]
        for a in found.prefix(fit) { out += le(a.handle) + le(a.groupEnd ?? a.handle) + a.value }
        return out
    }

    private func readByType(_ start: UInt16, _ end: UInt16, _ type: UInt16?) -> [UInt8] {
        let opcode = ATTOpcode.readByTypeRequest
        if invalid(start, end) { return error(opcode, start, .invalidHandle) }
        let found = attributes.filter { $0.type == type && (start...end).contains($0.handle) }
        guard let first = found.first else { return error(opcode, start, .attributeNotFound) }
        // §3.4.4.1: a first attribute the link's security does not allow reading is refused with its reason.
        if first.encrypted && !encrypted { return error(opcode, first.handle, .insufficientAuthentication) }
        // Entries of one length (the first's), the value cut to what the MTU leaves (§3.4.4.2).
        let valueLength = min(first.value.count, Int(Self.mtu) - 4)
        var out: [UInt8] = [ATTOpcode.readByTypeResponse.rawValue, UInt8(2 + valueLength)]
        for a in found {
            guard a.value.count >= valueLength, !(a.encrypted && !encrypted),
                out.count + 2 + valueLength <= Int(Self.mtu)
            else { break }
            if a.handle != first.handle, a.value.count != first.value.count { break }
            out += le(a.handle) + a.value.prefix(valueLength)
        }
        return out
    }

    private func findInformation(_ start: UInt16, _ end: UInt16) -> [UInt8] {
        let opcode = ATTOpcode.findInformationRequest
        if invalid(start, end) { return error(opcode, start, .invalidHandle) }
        let found = attributes.filter { (start...end).contains($0.handle) }
        guard !found.isEmpty else { return error(opcode, start, .attributeNotFound) }
        // Format 0x01: Handle(2) and a 16-bit UUID(2) each (§3.4.3.2).
        var out: [UInt8] = [ATTOpcode.findInformationResponse.rawValue, 0x01]
        for a in found.prefix((Int(Self.mtu) - 2) / 4) { out += le(a.handle) + le(a.type) }
        return out
    }

    private func read(_ opcode: ATTOpcode, _ handle: UInt16, offset: Int) -> [UInt8] {
        guard let a = attributes.first(where: { $0.handle == handle }) else {
            return error(opcode, handle, .invalidHandle)
        }
        if a.encrypted && !encrypted { return error(opcode, handle, .insufficientAuthentication) }
        guard offset <= a.value.count else { return error(opcode, handle, .invalidOffset) }
        let response: ATTOpcode = opcode == .readRequest ? .readResponse : .readBlobResponse
        return [response.rawValue] + a.value.dropFirst(offset).prefix(Int(Self.mtu) - 1)
    }

    /// Error Response (§3.4.1.1): Request Opcode In Error(1) Attribute Handle In Error(2) Error Code(1).
    private func error(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> [UInt8] {
        [ATTOpcode.errorResponse.rawValue, request.rawValue] + le(handle) + [code.rawValue]
    }

    private func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
}
