import BLETransport

// Extended advertising, one advertising set (the peripheral's side of enrolment). Section numbers are Core v5.4,
// Vol 4, Part E.

/// Advertising_Event_Properties (§7.8.53): bit 0 connectable, bit 1 scannable, bit 2 directed, bit 3 high duty
/// cycle directed, bit 4 legacy PDUs, bit 5 anonymous, bit 6 include TxPower.
public struct LEAdvertisingEventProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let connectable = LEAdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = LEAdvertisingEventProperties(rawValue: 1 << 1)
    public static let legacyPDUs = LEAdvertisingEventProperties(rawValue: 1 << 4)
    /// ADV_IND through the extended commands (Table 7.2: 0b0010011).
    public static let legacyConnectableScannable: LEAdvertisingEventProperties = [
        .connectable, .scannable, .legacyPDUs,
    ]
}

/// §7.8.53 HCI_LE_Set_Extended_Advertising_Parameters [v1]. Command parameters: Advertising_Handle (1),
/// Advertising_Event_Properties (2), Primary_Advertising_Interval_Min (3), Primary_Advertising_Interval_Max (3),
/// Primary_Advertising_Channel_Map (1), Own_Address_Type (1), Peer_Address_Type (1), Peer_Address (6),
/// Advertising_Filter_Policy (1), Advertising_TX_Power (1), Primary_Advertising_PHY (1),
/// Secondary_Advertising_Max_Skip (1), Secondary_Advertising_PHY (1), Advertising_SID (1),
/// Scan_Request_Notification_Enable (1). Return parameters: Status (1), Selected_TX_Power (1).
public struct LESetExtendedAdvertisingParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParameters
    public var handle: UInt8
    public var properties: LEAdvertisingEventProperties
    /// 0.625 ms units, 0x000020…0xFFFFFF.
    public var intervalMin: UInt32
    public var intervalMax: UInt32
    public var ownAddressType: LEAddressType
    /// 0x7F: the host has no preference.
    public static let noTxPowerPreference: Int8 = 0x7F
    /// Primary_Advertising_PHY and Secondary_Advertising_PHY 0x01: LE 1M.
    public static let le1M: UInt8 = 0x01

    public init(
        handle: UInt8 = 0, properties: LEAdvertisingEventProperties, intervalMin: UInt32, intervalMax: UInt32,
        ownAddressType: LEAddressType = .public
    ) {
        self.handle = handle
        self.properties = properties
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.ownAddressType = ownAddressType
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(handle)
        w.le16(properties.rawValue)
        for v in [intervalMin, intervalMax] {
            w.le16(UInt16(truncatingIfNeeded: v))
            w.u8(UInt8(truncatingIfNeeded: v >> 16))
        }
        w.u8(0x07)  // channels 37, 38 and 39
        w.u8(ownAddressType.rawValue)
        w.u8(LEAddressType.public.rawValue)
        BDAddress(rawValue: 0).write(to: &w)  // no peer: undirected
        w.u8(0x00)  // process scan and connection requests from all devices
        w.u8(UInt8(bitPattern: Self.noTxPowerPreference))
        w.u8(Self.le1M)
        w.u8(0x00)  // Secondary_Advertising_Max_Skip: AUX_ADV_IND every event (unused with legacy PDUs)
        w.u8(Self.le1M)
        w.u8(0x00)  // Advertising_SID
        w.u8(0x00)  // no scan request notifications
    }

    /// Selected_TX_Power, dBm.
    public static func parseReturnParameters(_ c: inout ByteCursor) -> Int8? { c.readU8().map { Int8(bitPattern: $0) } }
}

/// §7.8.54 HCI_LE_Set_Extended_Advertising_Data. Command parameters: Advertising_Handle (1), Operation (1),
/// Fragment_Preference (1), Advertising_Data_Length (1), Advertising_Data (length). Return parameters: Status (1).
public struct LESetExtendedAdvertisingDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingData
    /// Operation 0x03: complete extended advertising data.
    public static let complete: UInt8 = 0x03
    /// Fragment_Preference 0x01: the controller should not fragment.
    public static let doNotFragment: UInt8 = 0x01
    public var handle: UInt8
    public var data: [UInt8]
    /// With legacy PDUs the data is at most 31 octets (§7.8.54); more is cut off.
    public init(handle: UInt8 = 0, _ data: [UInt8]) {
        self.handle = handle
        self.data = Array(data.prefix(31))
    }
    public func writeParameters(to w: inout ByteWriter) {
        w.u8(handle)
        w.u8(Self.complete)
        w.u8(Self.doNotFragment)
        w.u8(UInt8(data.count))
        w.append(data)
    }
}

/// §7.8.56 HCI_LE_Set_Extended_Advertising_Enable. Command parameters: Enable (1), Num_Sets (1), then per set
/// Advertising_Handle (1), Duration (2), Max_Extended_Advertising_Events (1). Disabling with Num_Sets 0 disables
/// every set. Return parameters: Status (1).
public struct LESetExtendedAdvertisingEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingEnable
    public var enable: Bool
    public var handle: UInt8
    public init(enable: Bool, handle: UInt8 = 0) {
        self.enable = enable
        self.handle = handle
    }
    public func writeParameters(to w: inout ByteWriter) {
        w.u8(enable ? 1 : 0)
        if enable {
            w.u8(1)
            w.u8(handle)
            w.le16(0)  // no duration: until disabled
            w.u8(0)  // no limit on events
        } else {
            w.u8(0)
        }
    }
}
