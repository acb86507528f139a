/// Why a GATT client call failed. ATT errors carry the spec's code (by name and number), the request
/// that got it and the handle the server named.
public enum GATTClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The server answered with an Error Response (Core v5.4, Vol 3, Part F, §3.4.1.1).
    case att(ATTErrorCode, request: ATTOpcode, handle: UInt16)
    /// The transaction timed out (§3.3.3) and the bearer was dropped; `request` is the one that went unanswered.
    case timeout(request: ATTOpcode)
    /// The bearer ended before the answer came, or had already ended.
    case linkClosed
    /// The server's answer broke its PDU's layout or GATT's rules.
    case malformedResponse(ATTPDUError, request: ATTOpcode)
    /// A write longer than ATT_MTU - 3 (§3.4.5.1; long writes are not implemented).
    case valueTooLong(length: Int, limit: Int)
    /// The characteristic has no Client Characteristic Configuration descriptor to subscribe with.
    case noCCCD(characteristic: UInt16)
    /// The characteristic lacks the property the call needs (e.g. indicate).
    case propertyMissing(GATTCharacteristicProperties, characteristic: UInt16)

    /// The ATT error code, when the server sent one.
    public var attErrorCode: ATTErrorCode? {
        if case .att(let code, _, _) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .att(let code, let request, let handle):
            return "\(code) in reply to \(request.name ?? "\(request)") for handle 0x\(hex4(handle))"
        case .timeout(let request):
            return "ATT transaction timed out waiting for the answer to \(request.name ?? "\(request)"); bearer dropped"
        case .linkClosed: return "ATT bearer closed"
        case .malformedResponse(let error, let request):
            return "malformed answer to \(request.name ?? "\(request)"): \(error)"
        case .valueTooLong(let length, let limit): return "value of \(length) octets exceeds ATT_MTU - 3 = \(limit)"
        case .noCCCD(let handle): return "characteristic 0x\(hex4(handle)) has no Client Characteristic Configuration"
        case .propertyMissing(let property, let handle):
            return "characteristic 0x\(hex4(handle)) lacks property \(property)"
        }
    }
}

/// What a connected peer sends unasked.
public enum GATTClientEvent: Hashable, Sendable {
    /// A Handle Value Notification or Indication (Part F, §3.4.7).
    case value(handle: UInt16, bytes: [UInt8], indication: Bool)
    /// The Service Changed indication (Vol 3, Part G, §7.1): the attributes in this range changed and their
    /// discovery is stale. Recognised on the 0x2A05 characteristic found by `discoverAll()`.
    case serviceChanged(ClosedRange<UInt16>)
}
