import BLEHCI
import BLETransport

/// Encoders for the events the virtual controller sends, each beside its layout. Every function
/// returns the complete H4 bytes (indicator 0x04, event code, parameter length, parameters).
public enum SimEvents {
    /// The credit each Command Complete / Command Status grants: this controller takes one
    /// command at a time, as most USB dongles do (Num_HCI_Command_Packets, §7.7.14).
    public static let commandCredit: UInt8 = 1

    static func event(_ code: UInt8, _ parameters: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(3 + parameters.count)
        out.append(0x04)
        out.append(code)
        out.append(UInt8(parameters.count))
        out.append(contentsOf: parameters)
        return out
    }

    /// HCI_Command_Complete (§7.7.14): Num_HCI_Command_Packets(1) Command_Opcode(2) Return_Parameters.
    /// Return parameters start with the status for every command this simulator implements.
    public static func commandComplete(_ opcode: SimOpcode, _ returnParameters: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 3 + returnParameters.count)
        w.u8(commandCredit)
        w.le16(opcode.rawValue)
        w.append(returnParameters)
        return event(SimEventCode.commandComplete, w.bytes)
    }

    /// HCI_Command_Status (§7.7.15): Status(1) Num_HCI_Command_Packets(1) Command_Opcode(2).
    public static func commandStatus(_ status: SimStatus, _ opcode: SimOpcode) -> [UInt8] {
        var w = ByteWriter(capacity: 4)
        w.u8(status.rawValue)
        w.u8(commandCredit)
        w.le16(opcode.rawValue)
        return event(SimEventCode.commandStatus, w.bytes)
    }

    /// HCI_Hardware_Error (§7.7.16): Hardware_Code(1), vendor-specific.
    public static func hardwareError(code: UInt8) -> [UInt8] {
        event(SimEventCode.hardwareError, [code])
    }

    /// HCI_LE_Scan_Timeout (§7.7.65.17): a subevent with no parameters.
    public static func leScanTimeout() -> [UInt8] {
        event(SimEventCode.leMeta, [SimEventCode.leScanTimeout])
    }

    /// Legacy PDU types as reported in HCI_LE_Advertising_Report's Event_Type (§7.7.65.2).
    public enum LegacyEventType {
        public static let advInd: UInt8 = 0x00
        public static let advScanInd: UInt8 = 0x02
        public static let advNonconnInd: UInt8 = 0x03
        public static let scanRsp: UInt8 = 0x04
    }

    /// HCI_LE_Advertising_Report (§7.7.65.2) with one report, written straight into `out`:
    /// Subevent(1)=0x02 Num_Reports(1)=1 Event_Type(1) Address_Type(1) Address(6) Data_Length(1) Data RSSI(1).
    @inlinable public static func appendLegacyReport(
        to out: inout [UInt8], eventType: UInt8, addressType: UInt8, address: BDAddress, data: [UInt8], rssi: Int8
    ) {
        precondition(data.count <= 31, "legacy advertising data is at most 31 octets")
        out.append(0x04)
        out.append(SimEventCode.leMeta)
        out.append(UInt8(1 + 1 + 1 + 1 + 6 + 1 + data.count + 1))
        out.append(SimEventCode.leAdvertisingReport)
        out.append(1)
        out.append(eventType)
        out.append(addressType)
        appendAddress(&out, address)
        out.append(UInt8(data.count))
        out.append(contentsOf: data)
        out.append(UInt8(bitPattern: rssi))
    }

    /// Extended Event_Type bits for legacy PDUs (§7.7.65.13, table "Event_Type values for legacy
    /// PDUs"): bit 4 marks a legacy PDU; 0 connectable, 1 scannable, 3 scan response.
    public enum ExtendedEventType {
        public static let advInd: UInt16 = 0x0013
        public static let advScanInd: UInt16 = 0x0012
        public static let advNonconnInd: UInt16 = 0x0010
        public static let scanRspToAdvInd: UInt16 = 0x001B
        public static let scanRspToAdvScanInd: UInt16 = 0x001A
    }

    /// HCI_LE_Extended_Advertising_Report (§7.7.65.13) with one report:
    /// Subevent(1)=0x0D Num_Reports(1)=1 Event_Type(2) Address_Type(1) Address(6) Primary_PHY(1)
    /// Secondary_PHY(1) Advertising_SID(1) TX_Power(1) RSSI(1) Periodic_Advertising_Interval(2)
    /// Direct_Address_Type(1) Direct_Address(6) Data_Length(1) Data.
    @inlinable public static func appendExtendedReport(
        to out: inout [UInt8], eventType: UInt16, addressType: UInt8, address: BDAddress, data: [UInt8], rssi: Int8
    ) {
        out.append(0x04)
        out.append(SimEventCode.leMeta)
        out.append(UInt8(2 + 2 + 1 + 6 + 5 + 2 + 1 + 6 + 1 + data.count))
        out.append(SimEventCode.leExtendedAdvertisingReport)
        out.append(1)
        out.append(UInt8(truncatingIfNeeded: eventType))
        out.append(UInt8(truncatingIfNeeded: eventType >> 8))
        out.append(addressType)
        appendAddress(&out, address)
        out.append(0x01)  // Primary_PHY: LE 1M (legacy PDUs are always on 1M)
        out.append(0x00)  // Secondary_PHY: none
        out.append(0xFF)  // Advertising_SID: none
        out.append(0x7F)  // TX_Power: not available
        out.append(UInt8(bitPattern: rssi))
        out.append(0x00)
        out.append(0x00)  // Periodic_Advertising_Interval: none
        out.append(0x00)  // Direct_Address_Type
        for _ in 0..<6 { out.append(0x00) }  // Direct_Address
        out.append(UInt8(data.count))
        out.append(contentsOf: data)
    }

    @inlinable static func appendAddress(_ out: inout [UInt8], _ a: BDAddress) {
        var v = a.rawValue
        for _ in 0..<6 {
            out.append(UInt8(truncatingIfNeeded: v))
            v >>= 8
        }
    }
}
