import BLETransport

/// The simulator's own reading of the HCI wire codes it speaks (Core v5.4, Vol 4, Part E).
/// Kept apart from BLEHCI's codec on purpose: two independent readings of the spec that meet on
/// the wire are a better check than one codec talking to itself.

/// An HCI command opcode: OGF in the top 6 bits, OCF in the low 10 (§5.4.1). An open set.
public struct SimOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt16, ocf: UInt16) { self.rawValue = ogf << 10 | ocf }

    public var ogf: UInt16 { rawValue >> 10 }
    public var ocf: UInt16 { rawValue & 0x3FF }

    /// OGF 0x08, the LE Controller commands (§7.8).
    public static let leControllerGroup: UInt16 = 0x08

    // §7.1 Link Control
    public static let disconnect = SimOpcode(ogf: 0x01, ocf: 0x0006)
    public static let readRemoteVersion = SimOpcode(ogf: 0x01, ocf: 0x001D)
    // §7.3 Controller & Baseband
    public static let setEventMask = SimOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = SimOpcode(ogf: 0x03, ocf: 0x0003)
    public static let readRSSI = SimOpcode(ogf: 0x05, ocf: 0x0005)
    public static let setEventMaskPage2 = SimOpcode(ogf: 0x03, ocf: 0x0063)
    public static let writeLEHostSupported = SimOpcode(ogf: 0x03, ocf: 0x006D)
    // §7.4 Informational
    public static let readLocalVersion = SimOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = SimOpcode(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = SimOpcode(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = SimOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDAddr = SimOpcode(ogf: 0x04, ocf: 0x0009)
    // §7.8 LE Controller
    public static let leSetEventMask = SimOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = SimOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = SimOpcode(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = SimOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetScanParameters = SimOpcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = SimOpcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = SimOpcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = SimOpcode(ogf: 0x08, ocf: 0x000E)
    public static let leReadFilterAcceptListSize = SimOpcode(ogf: 0x08, ocf: 0x000F)
    public static let leClearFilterAcceptList = SimOpcode(ogf: 0x08, ocf: 0x0010)
    public static let leAddDeviceToFilterAcceptList = SimOpcode(ogf: 0x08, ocf: 0x0011)
    public static let leRemoveDeviceFromFilterAcceptList = SimOpcode(ogf: 0x08, ocf: 0x0012)
    public static let leConnectionUpdate = SimOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leExtendedCreateConnection = SimOpcode(ogf: 0x08, ocf: 0x0043)
    public static let leReadRemoteFeatures = SimOpcode(ogf: 0x08, ocf: 0x0016)
    public static let leSetDataLength = SimOpcode(ogf: 0x08, ocf: 0x0022)
    public static let leReadMaximumDataLength = SimOpcode(ogf: 0x08, ocf: 0x002F)
    public static let leReadBufferSizeV2 = SimOpcode(ogf: 0x08, ocf: 0x0060)
    public static let leSetExtendedScanParameters = SimOpcode(ogf: 0x08, ocf: 0x0041)
    public static let leSetExtendedScanEnable = SimOpcode(ogf: 0x08, ocf: 0x0042)
    public static let leSetAdvertisingParameters = SimOpcode(ogf: 0x08, ocf: 0x0006)
    public static let leSetAdvertisingData = SimOpcode(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = SimOpcode(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = SimOpcode(ogf: 0x08, ocf: 0x000A)
    public static let leLongTermKeyRequestReply = SimOpcode(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = SimOpcode(ogf: 0x08, ocf: 0x001B)
    public static let leSetExtendedAdvertisingParameters = SimOpcode(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = SimOpcode(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedAdvertisingEnable = SimOpcode(ogf: 0x08, ocf: 0x0039)

    public var description: String { "opcode 0x" + hex16(rawValue) }
}

/// HCI status / error codes (Vol 1, Part F, §1.3). An open set, printed with number and name.
public struct SimStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = SimStatus(rawValue: 0x00)
    public static let unknownCommand = SimStatus(rawValue: 0x01)
    public static let hardwareFailure = SimStatus(rawValue: 0x03)
    public static let unknownConnection = SimStatus(rawValue: 0x02)
    public static let memoryCapacityExceeded = SimStatus(rawValue: 0x07)
    public static let connectionLimitExceeded = SimStatus(rawValue: 0x09)
    public static let aclConnectionExists = SimStatus(rawValue: 0x0B)
    public static let commandDisallowed = SimStatus(rawValue: 0x0C)
    public static let unsupportedFeature = SimStatus(rawValue: 0x11)
    public static let invalidParameters = SimStatus(rawValue: 0x12)
    public static let connectionFailedToBeEstablished = SimStatus(rawValue: 0x3E)
    public static let unknownAdvertisingIdentifier = SimStatus(rawValue: 0x42)

    public var description: String {
        let name: String =
            switch self {
            case .success: "Success"
            case .unknownCommand: "Unknown HCI Command"
            case .hardwareFailure: "Hardware Failure"
            case .unknownConnection: "Unknown Connection Identifier"
            case .memoryCapacityExceeded: "Memory Capacity Exceeded"
            case .connectionLimitExceeded: "Connection Limit Exceeded"
            case .aclConnectionExists: "ACL Connection Already Exists"
            case .commandDisallowed: "Command Disallowed"
            case .unsupportedFeature: "Unsupported Feature or Parameter Value"
            case .invalidParameters: "Invalid HCI Command Parameters"
            case .connectionFailedToBeEstablished: "Connection Failed to be Established"
            case .unknownAdvertisingIdentifier: "Unknown Advertising Identifier"
            default: "unknown"
            }
        return "HCI status 0x\(hex8(rawValue)) \(name)"
    }
}

/// HCI event codes (§7.7) and LE Meta subevent codes (§7.7.65) the simulator sends.
public enum SimEventCode {
    public static let commandComplete: UInt8 = 0x0E
    public static let commandStatus: UInt8 = 0x0F
    public static let hardwareError: UInt8 = 0x10
    public static let leMeta: UInt8 = 0x3E
    public static let encryptionChange: UInt8 = 0x08
    public static let leLongTermKeyRequest: UInt8 = 0x05
    public static let leAdvertisingReport: UInt8 = 0x02
    public static let leExtendedAdvertisingReport: UInt8 = 0x0D
    public static let leScanTimeout: UInt8 = 0x11
    public static let leAdvertisingSetTerminated: UInt8 = 0x12
}

@inline(__always) func hex8(_ v: UInt8) -> String { upperHex(v, digits: 2) }

@inline(__always) func hex16(_ v: UInt16) -> String { upperHex(v, digits: 4) }
