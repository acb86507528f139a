import BLETransport

/// A command opcode: OGF in the upper 6 bits, OCF in the lower 10 (Core v5.4, Vol 4, Part E, §5.4.1).
/// An open set: an opcode without a name prints as "OGF 0x.. OCF 0x...." so a capture stays readable.
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    @inlinable public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF) }

    @inlinable public var ogf: UInt8 { UInt8(rawValue >> 10) }
    /// OGF 0x08, the LE Controller commands (Core v5.4, Vol 4, Part E, §7.8).
    public static let leControllerGroup: UInt8 = 0x08
    @inlinable public var ocf: UInt16 { rawValue & 0x03FF }

    /// "No operation": a Command Complete/Status for opcode 0x0000 only updates the command credit (§7.7.14).
    public static let noOperation = HCIOpcode(rawValue: 0x0000)

    // OGF 0x01, Link Control commands (§7.1).
    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    public static let readRemoteVersionInformation = HCIOpcode(ogf: 0x01, ocf: 0x001D)

    // OGF 0x03, Controller & Baseband commands (§7.3).
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    public static let setEventMaskPage2 = HCIOpcode(ogf: 0x03, ocf: 0x0063)
    public static let writeLEHostSupport = HCIOpcode(ogf: 0x03, ocf: 0x006D)

    // OGF 0x04, Informational parameters (§7.4).
    public static let readLocalVersionInformation = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = HCIOpcode(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDADDR = HCIOpcode(ogf: 0x04, ocf: 0x0009)

    // OGF 0x05, Status parameters (§7.5).
    public static let readRSSI = HCIOpcode(ogf: 0x05, ocf: 0x0005)

    // OGF 0x08, LE Controller commands (§7.8).
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    public static let leReadFilterAcceptListSize = HCIOpcode(ogf: 0x08, ocf: 0x000F)
    public static let leClearFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0010)
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leReadRemoteFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0016)
    public static let leEnableEncryption = HCIOpcode(ogf: 0x08, ocf: 0x0019)
    public static let leLongTermKeyRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x001B)
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x0021)
    public static let leSetDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0022)
    public static let leAddDeviceToResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0027)
    public static let leReadMaximumDataLength = HCIOpcode(ogf: 0x08, ocf: 0x002F)
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(ogf: 0x08, ocf: 0x003A)
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(ogf: 0x08, ocf: 0x003B)
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
    public static let leExtendedCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x0043)
    public static let leReadBufferSizeV2 = HCIOpcode(ogf: 0x08, ocf: 0x0060)

    /// Names as the Core specification writes them, without the "HCI_" prefix.
    static let names: [HCIOpcode: String] = [
        .noOperation: "No Operation",
        .disconnect: "Disconnect",
        .readRemoteVersionInformation: "Read Remote Version Information",
        .setEventMask: "Set Event Mask",
        .reset: "Reset",
        .setEventMaskPage2: "Set Event Mask Page 2",
        .writeLEHostSupport: "Write LE Host Support",
        .readLocalVersionInformation: "Read Local Version Information",
        .readLocalSupportedCommands: "Read Local Supported Commands",
        .readLocalSupportedFeatures: "Read Local Supported Features",
        .readBufferSize: "Read Buffer Size",
        .readBDADDR: "Read BD_ADDR",
        .readRSSI: "Read RSSI",
        .leSetEventMask: "LE Set Event Mask",
        .leReadBufferSize: "LE Read Buffer Size",
        .leReadLocalSupportedFeatures: "LE Read Local Supported Features",
        .leSetRandomAddress: "LE Set Random Address",
        .leSetAdvertisingParameters: "LE Set Advertising Parameters",
        .leSetAdvertisingData: "LE Set Advertising Data",
        .leSetScanResponseData: "LE Set Scan Response Data",
        .leSetAdvertisingEnable: "LE Set Advertising Enable",
        .leSetExtendedAdvertisingParameters: "LE Set Extended Advertising Parameters",
        .leSetExtendedAdvertisingData: "LE Set Extended Advertising Data",
        .leSetExtendedAdvertisingEnable: "LE Set Extended Advertising Enable",
        .leSetScanParameters: "LE Set Scan Parameters",
        .leSetScanEnable: "LE Set Scan Enable",
        .leCreateConnection: "LE Create Connection",
        .leCreateConnectionCancel: "LE Create Connection Cancel",
        .leReadFilterAcceptListSize: "LE Read Filter Accept List Size",
        .leClearFilterAcceptList: "LE Clear Filter Accept List",
        .leConnectionUpdate: "LE Connection Update",
        .leReadRemoteFeatures: "LE Read Remote Features",
        .leEnableEncryption: "LE Enable Encryption",
        .leLongTermKeyRequestReply: "LE Long Term Key Request Reply",
        .leLongTermKeyRequestNegativeReply: "LE Long Term Key Request Negative Reply",
        .leRemoteConnectionParameterRequestReply: "LE Remote Connection Parameter Request Reply",
        .leRemoteConnectionParameterRequestNegativeReply: "LE Remote Connection Parameter Request Negative Reply",
        .leSetDataLength: "LE Set Data Length",
        .leAddDeviceToResolvingList: "LE Add Device To Resolving List",
        .leReadMaximumDataLength: "LE Read Maximum Data Length",
        .leReadMaximumAdvertisingDataLength: "LE Read Maximum Advertising Data Length",
        .leReadNumberOfSupportedAdvertisingSets: "LE Read Number of Supported Advertising Sets",
        .leSetExtendedScanParameters: "LE Set Extended Scan Parameters",
        .leSetExtendedScanEnable: "LE Set Extended Scan Enable",
        .leExtendedCreateConnection: "LE Extended Create Connection",
        .leReadBufferSizeV2: "LE Read Buffer Size [v2]",
    ]

    /// The specification's name, or nil for an opcode this table does not know.
    public var name: String? { Self.names[self] }

    /// "LE Set Scan Enable (0x200C)", or "OGF 0x08 OCF 0x0099 (0x2099)" when unknown.
    public var description: String {
        let number = "0x" + upperHex(rawValue, digits: 4)
        if let name { return "\(name) (\(number))" }
        return "OGF 0x\(upperHex(UInt16(ogf), digits: 2)) OCF 0x\(upperHex(ocf, digits: 4)) (\(number))"
    }
}
