import BLETransport

/// An ATT opcode (Core v5.4, Vol 3, Part F, §3.3.1 and the summary table of §3.4.8). Open: a PDU with an
/// opcode this host does not know still has one, and it prints by number.
///
/// §3.3.1: "Bit 6 — Command Flag", "Bit 7 — Authentication Signature Flag"; bits 0–5 are the method.
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let errorResponse = ATTOpcode(0x01)
    public static let exchangeMTURequest = ATTOpcode(0x02)
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    public static let findInformationRequest = ATTOpcode(0x04)
    public static let findInformationResponse = ATTOpcode(0x05)
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    public static let readByTypeRequest = ATTOpcode(0x08)
    public static let readByTypeResponse = ATTOpcode(0x09)
    public static let readRequest = ATTOpcode(0x0A)
    public static let readResponse = ATTOpcode(0x0B)
    public static let readBlobRequest = ATTOpcode(0x0C)
    public static let readBlobResponse = ATTOpcode(0x0D)
    public static let readMultipleRequest = ATTOpcode(0x0E)
    public static let readMultipleResponse = ATTOpcode(0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    public static let writeRequest = ATTOpcode(0x12)
    public static let writeResponse = ATTOpcode(0x13)
    public static let prepareWriteRequest = ATTOpcode(0x16)
    public static let prepareWriteResponse = ATTOpcode(0x17)
    public static let executeWriteRequest = ATTOpcode(0x18)
    public static let executeWriteResponse = ATTOpcode(0x19)
    public static let handleValueNotification = ATTOpcode(0x1B)
    public static let handleValueIndication = ATTOpcode(0x1D)
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    public static let writeCommand = ATTOpcode(0x52)
    public static let signedWriteCommand = ATTOpcode(0xD2)

    /// §3.3.1: bit 6 set means a command, which has no response.
    @inlinable public var isCommand: Bool { rawValue & 0x40 != 0 }

    /// The response a request expects (§3.4.8: each "Request" has its "Response"), nil for anything
    /// that is not a client request. One table, used both to match responses and to reject requests
    /// a server sends to this client.
    public var expectedResponse: ATTOpcode? { Self.responses[self] }

    /// True for a PDU a server sends only in answer to a request.
    public var isResponse: Bool { Self.requestsByResponse[self] != nil || self == .errorResponse }

    static let responses: [ATTOpcode: ATTOpcode] = [
        .exchangeMTURequest: .exchangeMTUResponse,
        .findInformationRequest: .findInformationResponse,
        .findByTypeValueRequest: .findByTypeValueResponse,
        .readByTypeRequest: .readByTypeResponse,
        .readRequest: .readResponse,
        .readBlobRequest: .readBlobResponse,
        .readMultipleRequest: .readMultipleResponse,
        .readByGroupTypeRequest: .readByGroupTypeResponse,
        .writeRequest: .writeResponse,
        .prepareWriteRequest: .prepareWriteResponse,
        .executeWriteRequest: .executeWriteResponse,
        .readMultipleVariableRequest: .readMultipleVariableResponse,
    ]
    static let requestsByResponse: [ATTOpcode: ATTOpcode] =
        Dictionary(uniqueKeysWithValues: responses.map { ($0.value, $0.key) })

    static let names: [UInt8: String] = [
        0x01: "Error Response",
        0x02: "Exchange MTU Request", 0x03: "Exchange MTU Response",
        0x04: "Find Information Request", 0x05: "Find Information Response",
        0x06: "Find By Type Value Request", 0x07: "Find By Type Value Response",
        0x08: "Read By Type Request", 0x09: "Read By Type Response",
        0x0A: "Read Request", 0x0B: "Read Response",
        0x0C: "Read Blob Request", 0x0D: "Read Blob Response",
        0x0E: "Read Multiple Request", 0x0F: "Read Multiple Response",
        0x10: "Read By Group Type Request", 0x11: "Read By Group Type Response",
        0x12: "Write Request", 0x13: "Write Response",
        0x16: "Prepare Write Request", 0x17: "Prepare Write Response",
        0x18: "Execute Write Request", 0x19: "Execute Write Response",
        0x1B: "Handle Value Notification", 0x1D: "Handle Value Indication", 0x1E: "Handle Value Confirmation",
        0x20: "Read Multiple Variable Request", 0x21: "Read Multiple Variable Response",
        0x23: "Multiple Handle Value Notification",
        0x52: "Write Command", 0xD2: "Signed Write Command",
    ]

    /// The spec's name, nil for a code it does not define.
    public var name: String? { Self.names[rawValue] }

    /// "ATT opcode 0x0A Read Request"; an unknown opcode prints as "ATT opcode 0x3F".
    public var description: String {
        let number = "ATT opcode 0x" + hex2(rawValue)
        return name.map { number + " " + $0 } ?? number
    }
}

/// An ATT error code (Core v5.4, Vol 3, Part F, §3.4.1.1, Table 3.4), carried by the Error Response.
/// Open: 0x80–0x9F are the application's, 0xE0–0xFF the profiles' (Core Specification Supplement, Part B).
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(0x01)
    public static let readNotPermitted = ATTErrorCode(0x02)
    public static let writeNotPermitted = ATTErrorCode(0x03)
    public static let invalidPDU = ATTErrorCode(0x04)
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    public static let requestNotSupported = ATTErrorCode(0x06)
    public static let invalidOffset = ATTErrorCode(0x07)
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    public static let prepareQueueFull = ATTErrorCode(0x09)
    public static let attributeNotFound = ATTErrorCode(0x0A)
    public static let attributeNotLong = ATTErrorCode(0x0B)
    public static let encryptionKeySizeTooShort = ATTErrorCode(0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    public static let unlikelyError = ATTErrorCode(0x0E)
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    public static let insufficientResources = ATTErrorCode(0x11)
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    public static let valueNotAllowed = ATTErrorCode(0x13)
    // Common Profile and Service Error Codes (Core Specification Supplement, Part B, §1.2).
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    public static let outOfRange = ATTErrorCode(0xFF)

    /// Table 3.4, indexed by code from 0x01; the profile codes follow.
    static let table: [String] = [
        "Invalid Handle", "Read Not Permitted", "Write Not Permitted", "Invalid PDU",
        "Insufficient Authentication", "Request Not Supported", "Invalid Offset", "Insufficient Authorization",
        "Prepare Queue Full", "Attribute Not Found", "Attribute Not Long", "Encryption Key Size Too Short",
        "Invalid Attribute Value Length", "Unlikely Error", "Insufficient Encryption", "Unsupported Group Type",
        "Insufficient Resources", "Database Out Of Sync", "Value Not Allowed",
    ]
    static let profileNames: [UInt8: String] = [
        0xFC: "Write Request Rejected", 0xFD: "Client Characteristic Configuration Descriptor Improperly Configured",
        0xFE: "Procedure Already in Progress", 0xFF: "Out of Range",
    ]

    /// The spec's name; "Application Error" for 0x80–0x9F (§3.4.1.1: "defined by a higher layer
    /// specification"); nil for reserved codes.
    public var name: String? {
        switch rawValue {
        case 0x01...0x13: return Self.table[Int(rawValue) - 1]
        case 0x80...0x9F: return "Application Error"
        default: return Self.profileNames[rawValue]
        }
    }

    /// "ATT 0x0A Attribute Not Found"; a reserved code prints as "ATT 0x42".
    public var description: String {
        let number = "ATT 0x" + hex2(rawValue)
        return name.map { number + " " + $0 } ?? number
    }
}

@inline(__always) func hex2(_ v: UInt8) -> String { upperHex(v, digits: 2) }

@inline(__always) func hex4(_ v: UInt16) -> String { upperHex(v, digits: 4) }
