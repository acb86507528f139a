import BLETransport

// Controller set-up commands. Section numbers are Core v5.4, Vol 4, Part E.

/// §7.3.2 HCI_Reset. Command parameters: none. Return parameters: Status (1).
public struct ResetCommand: HCICommand {
    public static let opcode = HCIOpcode.reset
    public init() {}
}

/// §7.4.1 HCI_Read_Local_Version_Information. Command parameters: none.
/// Return parameters: Status (1), HCI_Version (1), HCI_Subversion (2), LMP_Version (1),
/// Company_Identifier (2), LMP_Subversion (2).
public struct ReadLocalVersionInformationCommand: HCICommand {
    public static let opcode = HCIOpcode.readLocalVersionInformation
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LocalVersionInformation? {
        guard let v = c.readU8(), let sub = c.readLE16(), let lmp = c.readU8(), let company = c.readLE16(),
            let lmpSub = c.readLE16()
        else { return nil }
        return LocalVersionInformation(
            hciVersion: v, hciSubversion: sub, lmpVersion: lmp, companyIdentifier: company, lmpSubversion: lmpSub)
    }
}

/// §7.4.2 HCI_Read_Local_Supported_Commands. Return parameters: Status (1), Supported_Commands (64).
public struct ReadLocalSupportedCommandsCommand: HCICommand {
    public static let opcode = HCIOpcode.readLocalSupportedCommands
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> SupportedCommands? {
        c.readBytes(64).map { SupportedCommands(octets: Array($0)) }
    }
}

/// §7.4.3 HCI_Read_Local_Supported_Features. Return parameters: Status (1), LMP_Features (8).
public struct ReadLocalSupportedFeaturesCommand: HCICommand {
    public static let opcode = HCIOpcode.readLocalSupportedFeatures
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LMPFeatures? {
        c.readLE64().map(LMPFeatures.init(rawValue:))
    }
}

/// §7.4.5 HCI_Read_Buffer_Size. Return parameters: Status (1), ACL_Data_Packet_Length (2),
/// Synchronous_Data_Packet_Length (1), Total_Num_ACL_Data_Packets (2), Total_Num_Synchronous_Data_Packets (2).
public struct ReadBufferSizeCommand: HCICommand {
    public static let opcode = HCIOpcode.readBufferSize
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> BufferSize? {
        guard let acl = c.readLE16(), let sco = c.readU8(), let nACL = c.readLE16(), let nSCO = c.readLE16() else {
            return nil
        }
        return BufferSize(
            aclDataPacketLength: acl, synchronousDataPacketLength: sco, totalNumACLDataPackets: nACL,
            totalNumSynchronousDataPackets: nSCO)
    }
}

/// §7.4.6 HCI_Read_BD_ADDR. Return parameters: Status (1), BD_ADDR (6).
public struct ReadBDADDRCommand: HCICommand {
    public static let opcode = HCIOpcode.readBDADDR
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> BDAddress? { BDAddress.read(from: &c) }
}

/// §7.3.1 HCI_Set_Event_Mask. Command parameters: Event_Mask (8). Return parameters: Status (1).
public struct SetEventMaskCommand: HCICommand {
    public static let opcode = HCIOpcode.setEventMask
    public var mask: HCIEventMask
    public init(_ mask: HCIEventMask) { self.mask = mask }
    public func writeParameters(to w: inout ByteWriter) { w.le64(mask.rawValue) }
}

/// §7.8.1 HCI_LE_Set_Event_Mask. Command parameters: LE_Event_Mask (8). Return parameters: Status (1).
public struct LESetEventMaskCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetEventMask
    public var mask: LEEventMask
    public init(_ mask: LEEventMask) { self.mask = mask }
    public func writeParameters(to w: inout ByteWriter) { w.le64(mask.rawValue) }
}

/// §7.8.2 HCI_LE_Read_Buffer_Size [v1]. Return parameters: Status (1), LE_ACL_Data_Packet_Length (2),
/// Total_Num_LE_ACL_Data_Packets (1).
public struct LEReadBufferSizeCommand: HCICommand {
    public static let opcode = HCIOpcode.leReadBufferSize
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LEBufferSize? {
        guard let len = c.readLE16(), let n = c.readU8() else { return nil }
        return LEBufferSize(leACLDataPacketLength: len, totalNumLEACLDataPackets: n)
    }
}

/// §7.8.2 HCI_LE_Read_Buffer_Size [v2]. Return parameters: Status (1), LE_ACL_Data_Packet_Length (2),
/// Total_Num_LE_ACL_Data_Packets (1), ISO_Data_Packet_Length (2), Total_Num_ISO_Data_Packets (1).
public struct LEReadBufferSizeV2Command: HCICommand {
    public static let opcode = HCIOpcode.leReadBufferSizeV2
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LEBufferSize? {
        guard let len = c.readLE16(), let n = c.readU8(), let iso = c.readLE16(), let nISO = c.readU8() else {
            return nil
        }
        return LEBufferSize(
            leACLDataPacketLength: len, totalNumLEACLDataPackets: n, isoDataPacketLength: iso,
            totalNumISODataPackets: nISO)
    }
}

/// §7.8.3 HCI_LE_Read_Local_Supported_Features. Return parameters: Status (1), LE_Features (8).
public struct LEReadLocalSupportedFeaturesCommand: HCICommand {
    public static let opcode = HCIOpcode.leReadLocalSupportedFeatures
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LEFeatures? {
        c.readLE64().map(LEFeatures.init(rawValue:))
    }
}

/// §7.8.46 HCI_LE_Read_Maximum_Data_Length. Return parameters: Status (1), Supported_Max_TX_Octets (2),
/// Supported_Max_TX_Time (2), Supported_Max_RX_Octets (2), Supported_Max_RX_Time (2).
public struct LEReadMaximumDataLengthCommand: HCICommand {
    public static let opcode = HCIOpcode.leReadMaximumDataLength
    public init() {}
    public static func parseReturnParameters(_ c: inout ByteCursor) -> LEMaximumDataLength? {
        guard let txO = c.readLE16(), let txT = c.readLE16(), let rxO = c.readLE16(), let rxT = c.readLE16() else {
            return nil
        }
        return LEMaximumDataLength(maxTxOctets: txO, maxTxTime: txT, maxRxOctets: rxO, maxRxTime: rxT)
    }
}
