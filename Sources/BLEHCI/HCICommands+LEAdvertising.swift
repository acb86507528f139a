import BLETransport

// Legacy advertising commands (used by tests and the kernel VM to make a controller advertise).
// Section numbers are Core v5.4, Vol 4, Part E.

/// §7.8.5 HCI_LE_Set_Advertising_Parameters. Command parameters: Advertising_Interval_Min (2),
/// Advertising_Interval_Max (2), Advertising_Type (1), Own_Address_Type (1), Peer_Address_Type (1),
/// Peer_Address (6), Advertising_Channel_Map (1), Advertising_Filter_Policy (1). Return parameters: Status (1).
public struct LESetAdvertisingParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingParameters
    /// 0.625 ms units, 0x0020…0x4000.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// 0 ADV_IND, 1 ADV_DIRECT_IND (high duty), 2 ADV_SCAN_IND, 3 ADV_NONCONN_IND, 4 ADV_DIRECT_IND (low duty).
    public var advertisingType: UInt8
    public var ownAddressType: LEAddressType
    public var peerAddressType: LEAddressType
    public var peerAddress: BDAddress
    /// Bit 0 channel 37, bit 1 channel 38, bit 2 channel 39.
    public var channelMap: UInt8
    public var filterPolicy: UInt8

    public init(
        intervalMin: UInt16 = 0x00A0, intervalMax: UInt16 = 0x00A0, advertisingType: UInt8 = 0,
        ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType = .public,
        peerAddress: BDAddress = BDAddress(rawValue: 0), channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0
    ) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(intervalMin)
        w.le16(intervalMax)
        w.u8(advertisingType)
        w.u8(ownAddressType.rawValue)
        w.u8(peerAddressType.rawValue)
        peerAddress.write(to: &w)
        w.u8(channelMap)
        w.u8(filterPolicy)
    }
}

/// §7.8.7 HCI_LE_Set_Advertising_Data. Command parameters: Advertising_Data_Length (1),
/// Advertising_Data (31; the significant part first, the rest zero). Return parameters: Status (1).
public struct LESetAdvertisingDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingData
    public var data: [UInt8]
    /// Data beyond 31 octets cannot be sent with legacy advertising and is cut off.
    public init(_ data: [UInt8]) { self.data = Array(data.prefix(31)) }
    public func writeParameters(to w: inout ByteWriter) { writeLegacyData(data, to: &w) }
}

/// §7.8.8 HCI_LE_Set_Scan_Response_Data. Command parameters: Scan_Response_Data_Length (1),
/// Scan_Response_Data (31). Return parameters: Status (1).
public struct LESetScanResponseDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanResponseData
    public var data: [UInt8]
    public init(_ data: [UInt8]) { self.data = Array(data.prefix(31)) }
    public func writeParameters(to w: inout ByteWriter) { writeLegacyData(data, to: &w) }
}

/// §7.8.9 HCI_LE_Set_Advertising_Enable. Command parameters: Advertising_Enable (1). Return parameters: Status (1).
public struct LESetAdvertisingEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingEnable
    public var enable: Bool
    public init(enable: Bool) { self.enable = enable }
    public func writeParameters(to w: inout ByteWriter) { w.u8(enable ? 1 : 0) }
}

/// Length octet, then the data zero-padded to 31 octets: the parameter is fixed-size (§7.8.7).
func writeLegacyData(_ data: [UInt8], to w: inout ByteWriter) {
    w.u8(UInt8(data.count))
    w.append(data)
    w.append(repeatElement(UInt8(0), count: 31 - data.count))
}
