import BLETransport

// Connection commands. Section numbers are Core v5.4, Vol 4, Part E.

/// §7.1.6 HCI_Disconnect. Command parameters: Connection_Handle (2), Reason (1).
/// Answered by Command Status; Disconnection Complete follows.
public struct DisconnectCommand: HCICommand {
    public static let opcode = HCIOpcode.disconnect
    public static var completion: HCICommandCompletion { .commandStatus }
    public var handle: UInt16
    /// Usually 0x13 Remote User Terminated Connection (the allowed set is listed in §7.1.6).
    public var reason: HCIStatus

    public init(handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) {
        self.handle = handle
        self.reason = reason
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        w.u8(reason.rawValue)
    }
}

/// §7.5.4 HCI_Read_RSSI. Command parameters: Handle (2).
/// Return parameters: Status (1), Handle (2), RSSI (1, signed dBm).
public struct ReadRSSICommand: HCICommand {
    public static let opcode = HCIOpcode.readRSSI
    public var handle: UInt16
    public init(handle: UInt16) { self.handle = handle }
    public func writeParameters(to w: inout ByteWriter) { w.le16(handle & 0x0FFF) }
    public static func parseReturnParameters(_ c: inout ByteCursor) -> (handle: UInt16, rssi: Int8)? {
        guard let h = c.readLE16(), let r = c.readI8() else { return nil }
        return (h & 0x0FFF, r)
    }
}

/// Connection parameters shared by LE Create Connection, LE Connection Update and LE Remote Connection Parameter
/// Request Reply (§7.8.12, §7.8.18, §7.8.31).
public struct LEConnectionParameters: Hashable, Sendable {
    /// 1.25 ms units, 0x0006…0x0C80.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// Connection events the peripheral may skip, 0x0000…0x01F3.
    public var maxLatency: UInt16
    /// 10 ms units, 0x000A…0x0C80.
    public var supervisionTimeout: UInt16
    /// 0.625 ms units; informative.
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(
        intervalMin: UInt16 = 0x0018, intervalMax: UInt16 = 0x0028, maxLatency: UInt16 = 0,
        supervisionTimeout: UInt16 = 0x01F4, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
    ) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    func write(to w: inout ByteWriter) {
        w.le16(intervalMin)
        w.le16(intervalMax)
        w.le16(maxLatency)
        w.le16(supervisionTimeout)
        w.le16(minCELength)
        w.le16(maxCELength)
    }
}

/// §7.8.12 HCI_LE_Create_Connection. Command parameters: LE_Scan_Interval (2), LE_Scan_Window (2),
/// Initiator_Filter_Policy (1), Peer_Address_Type (1), Peer_Address (6), Own_Address_Type (1),
/// Connection_Interval_Min (2), Connection_Interval_Max (2), Max_Latency (2), Supervision_Timeout (2),
/// Min_CE_Length (2), Max_CE_Length (2). Answered by Command Status; LE (Enhanced) Connection Complete follows.
public struct LECreateConnectionCommand: HCICommand {
    public static let opcode = HCIOpcode.leCreateConnection
    public static var completion: HCICommandCompletion { .commandStatus }
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var filterPolicy: UInt8
    public var peerAddressType: LEAddressType
    public var peerAddress: BDAddress
    public var ownAddressType: LEAddressType
    public var connection: LEConnectionParameters

    public init(
        peerAddressType: LEAddressType, peerAddress: BDAddress, scanInterval: UInt16 = 0x0060,
        scanWindow: UInt16 = 0x0060, filterPolicy: UInt8 = 0, ownAddressType: LEAddressType = .public,
        connection: LEConnectionParameters = LEConnectionParameters()
    ) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.filterPolicy = filterPolicy
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.ownAddressType = ownAddressType
        self.connection = connection
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(scanInterval)
        w.le16(scanWindow)
        w.u8(filterPolicy)
        w.u8(peerAddressType.rawValue)
        peerAddress.write(to: &w)
        w.u8(ownAddressType.rawValue)
        connection.write(to: &w)
    }
}

/// §7.8.13 HCI_LE_Create_Connection_Cancel. Command parameters: none. Return parameters: Status (1).
/// On success the controller also sends LE Connection Complete with status 0x02 Unknown Connection Identifier.
public struct LECreateConnectionCancelCommand: HCICommand {
    public static let opcode = HCIOpcode.leCreateConnectionCancel
    public init() {}
}

/// §7.8.18 HCI_LE_Connection_Update. Command parameters: Connection_Handle (2), Connection_Interval_Min (2),
/// Connection_Interval_Max (2), Max_Latency (2), Supervision_Timeout (2), Min_CE_Length (2), Max_CE_Length (2).
/// Answered by Command Status; LE Connection Update Complete follows.
public struct LEConnectionUpdateCommand: HCICommand {
    public static let opcode = HCIOpcode.leConnectionUpdate
    public static var completion: HCICommandCompletion { .commandStatus }
    public var handle: UInt16
    public var parameters: LEConnectionParameters

    public init(handle: UInt16, parameters: LEConnectionParameters) {
        self.handle = handle
        self.parameters = parameters
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        parameters.write(to: &w)
    }
}

/// §7.8.31 HCI_LE_Remote_Connection_Parameter_Request_Reply. Command parameters: Connection_Handle (2),
/// Interval_Min (2), Interval_Max (2), Max_Latency (2), Timeout (2), Min_CE_Length (2), Max_CE_Length (2).
/// Return parameters: Status (1), Connection_Handle (2). Accepts the parameters a peripheral asked for in the
/// LE Remote Connection Parameter Request event (§7.7.65.6).
public struct LERemoteConnectionParameterRequestReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestReply
    public var handle: UInt16
    public var parameters: LEConnectionParameters

    public init(handle: UInt16, parameters: LEConnectionParameters) {
        self.handle = handle
        self.parameters = parameters
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        parameters.write(to: &w)
    }

    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16().map { $0 & 0x0FFF } }
}

/// §7.8.32 HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply. Command parameters: Connection_Handle (2),
/// Reason (1). Return parameters: Status (1), Connection_Handle (2).
public struct LERemoteConnectionParameterRequestNegativeReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestNegativeReply
    public var handle: UInt16
    /// Usually 0x3B Unacceptable Connection Parameters (Vol 1, Part F).
    public var reason: HCIStatus

    public init(handle: UInt16, reason: HCIStatus = .unacceptableConnectionParameters) {
        self.handle = handle
        self.reason = reason
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        w.u8(reason.rawValue)
    }

    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16().map { $0 & 0x0FFF } }
}

/// §7.8.66 HCI_LE_Extended_Create_Connection [v1]. Command parameters: Initiator_Filter_Policy (1),
/// Own_Address_Type (1), Peer_Address_Type (1), Peer_Address (6), Initiating_PHYs (1), then for each PHY bit set
/// (bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded): Scan_Interval (2), Scan_Window (2), Connection_Interval_Min (2),
/// Connection_Interval_Max (2), Max_Latency (2), Supervision_Timeout (2), Min_CE_Length (2), Max_CE_Length (2).
/// Answered by Command Status. A host that scans with the extended commands must connect with this one: §3.1.1
/// forbids mixing legacy and extended advertising commands (the controller answers Command Disallowed).
public struct LEExtendedCreateConnectionCommand: HCICommand {
    public static let opcode = HCIOpcode.leExtendedCreateConnection
    public static var completion: HCICommandCompletion { .commandStatus }
    public var filterPolicy: UInt8
    public var ownAddressType: LEAddressType
    public var peerAddressType: LEAddressType
    public var peerAddress: BDAddress
    /// LE 1M only: every advertiser the gateway connects to is heard on the primary advertising PHY.
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var connection: LEConnectionParameters

    public init(
        peerAddressType: LEAddressType, peerAddress: BDAddress, scanInterval: UInt16 = 0x0060,
        scanWindow: UInt16 = 0x0060, filterPolicy: UInt8 = 0, ownAddressType: LEAddressType = .public,
        connection: LEConnectionParameters = LEConnectionParameters()
    ) {
        self.filterPolicy = filterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.connection = connection
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(filterPolicy)
        w.u8(ownAddressType.rawValue)
        w.u8(peerAddressType.rawValue)
        peerAddress.write(to: &w)
        w.u8(0x01)  // Initiating_PHYs: LE 1M
        w.le16(scanInterval)
        w.le16(scanWindow)
        connection.write(to: &w)
    }
}
