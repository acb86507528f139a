import BLETransport

/// An HCI status / error code, as returned in Command Complete, Command Status and the status and
/// reason fields of other events (Core v5.4, Vol 1, Part F, §1.3 "List of error codes").
/// An open set: an unlisted code prints as "HCI status 0x.." with no name.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownCommand = HCIStatus(rawValue: 0x01)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    public static let pageTimeout = HCIStatus(rawValue: 0x04)
    public static let authenticationFailure = HCIStatus(rawValue: 0x05)
    /// "PIN or Key Missing": an encryption the peer started with a key this side does not have.
    public static let pinOrKeyMissing = HCIStatus(rawValue: 0x06)
    public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let connectionLimitExceeded = HCIStatus(rawValue: 0x09)
    public static let connectionAlreadyExists = HCIStatus(rawValue: 0x0B)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let connectionRejectedLimitedResources = HCIStatus(rawValue: 0x0D)
    public static let unsupportedFeatureOrParameter = HCIStatus(rawValue: 0x11)
    public static let invalidParameters = HCIStatus(rawValue: 0x12)
    public static let remoteUserTerminatedConnection = HCIStatus(rawValue: 0x13)
    public static let remoteTerminatedLowResources = HCIStatus(rawValue: 0x14)
    public static let remoteTerminatedPowerOff = HCIStatus(rawValue: 0x15)
    public static let connectionTerminatedByLocalHost = HCIStatus(rawValue: 0x16)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    public static let llResponseTimeout = HCIStatus(rawValue: 0x22)
    public static let llProcedureCollision = HCIStatus(rawValue: 0x23)
    public static let instantPassed = HCIStatus(rawValue: 0x28)
    public static let insufficientSecurity = HCIStatus(rawValue: 0x2F)
    public static let controllerBusy = HCIStatus(rawValue: 0x3A)
    public static let unacceptableConnectionParameters = HCIStatus(rawValue: 0x3B)
    public static let advertisingTimeout = HCIStatus(rawValue: 0x3C)
    public static let connectionTerminatedMICFailure = HCIStatus(rawValue: 0x3D)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)
    public static let unknownAdvertisingIdentifier = HCIStatus(rawValue: 0x42)
    public static let limitReached = HCIStatus(rawValue: 0x43)
    public static let operationCancelledByHost = HCIStatus(rawValue: 0x44)

    /// The whole table of Vol 1, Part F, §1.3, indexed by code; nil marks a reserved code.
    /// Where the table gives a BR/EDR and an LE name ("LMP / LL"), both are kept.
    static let names: [String?] = [
        "Success",  // 0x00
        "Unknown HCI Command",
        "Unknown Connection Identifier",
        "Hardware Failure",
        "Page Timeout",
        "Authentication Failure",
        "PIN or Key Missing",
        "Memory Capacity Exceeded",
        "Connection Timeout",  // 0x08
        "Connection Limit Exceeded",
        "Synchronous Connection Limit To A Device Exceeded",
        "Connection Already Exists",
        "Command Disallowed",
        "Connection Rejected due to Limited Resources",
        "Connection Rejected Due To Security Reasons",
        "Connection Rejected due to Unacceptable BD_ADDR",
        "Connection Accept Timeout Exceeded",  // 0x10
        "Unsupported Feature or Parameter Value",
        "Invalid HCI Command Parameters",
        "Remote User Terminated Connection",
        "Remote Device Terminated Connection due to Low Resources",
        "Remote Device Terminated Connection due to Power Off",
        "Connection Terminated By Local Host",
        "Repeated Attempts",
        "Pairing Not Allowed",  // 0x18
        "Unknown LMP PDU",
        "Unsupported Remote Feature",
        "SCO Offset Rejected",
        "SCO Interval Rejected",
        "SCO Air Mode Rejected",
        "Invalid LMP Parameters / Invalid LL Parameters",
        "Unspecified Error",
        "Unsupported LMP Parameter Value / Unsupported LL Parameter Value",  // 0x20
        "Role Change Not Allowed",
        "LMP Response Timeout / LL Response Timeout",
        "LMP Error Transaction Collision / LL Procedure Collision",
        "LMP PDU Not Allowed",
        "Encryption Mode Not Acceptable",
        "Link Key cannot be Changed",
        "Requested QoS Not Supported",
        "Instant Passed",  // 0x28
        "Pairing With Unit Key Not Supported",
        "Different Transaction Collision",
        nil,  // 0x2B reserved
        "QoS Unacceptable Parameter",
        "QoS Rejected",
        "Channel Classification Not Supported",
        "Insufficient Security",
        "Parameter Out Of Mandatory Range",  // 0x30
        nil,  // 0x31 reserved
        "Role Switch Pending",
        nil,  // 0x33 reserved
        "Reserved Slot Violation",
        "Role Switch Failed",
        "Extended Inquiry Response Too Large",
        "Secure Simple Pairing Not Supported By Host",
        "Host Busy - Pairing",  // 0x38
        "Connection Rejected due to No Suitable Channel Found",
        "Controller Busy",
        "Unacceptable Connection Parameters",
        "Advertising Timeout",
        "Connection Terminated due to MIC Failure",
        "Connection Failed to be Established / Synchronization Timeout",
        "Previously used",  // 0x3F (was "MAC Connection Failed")
        "Coarse Clock Adjustment Rejected but Will Try to Adjust Using Clock Dragging",  // 0x40
        "Type0 Submap Not Defined",
        "Unknown Advertising Identifier",
        "Limit Reached",
        "Operation Cancelled by Host",
        "Packet Too Long",
        "Too Late",
        "Too Early",  // 0x47
    ]

    /// The specification's name, or nil for a reserved or unknown code.
    public var name: String? {
        Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : nil
    }

    @inlinable public var isSuccess: Bool { rawValue == 0 }

    /// "HCI status 0x0C Command Disallowed"; "HCI status 0x99" when the code has no name.
    public var description: String {
        let number = "HCI status 0x" + upperHex(rawValue, digits: 2)
        return name.map { "\(number) \($0)" } ?? number
    }
}
