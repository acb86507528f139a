import Testing

@testable import BLEHCI

@Suite struct WireCodeTests {
    @Test func statusCodesPrintTheirSpecificationNumberAndName() {
        #expect("\(HCIStatus(rawValue: 0x08))" == "HCI status 0x08 Connection Timeout")
        #expect("\(HCIStatus.remoteUserTerminatedConnection)" == "HCI status 0x13 Remote User Terminated Connection")
        #expect(HCIStatus(rawValue: 0x3E).name == "Connection Failed to be Established / Synchronization Timeout")
        #expect(HCIStatus(rawValue: 0x01).name == "Unknown HCI Command")
        #expect("\(HCIStatus.commandDisallowed)" == "HCI status 0x0C Command Disallowed")
        #expect(HCIStatus(rawValue: 0x45).name == "Packet Too Long")
    }

    @Test func statusTableCoversEveryCodeUpToTheLastAndMarksReservedOnes() {
        #expect(HCIStatus.names.count == 0x48)
        #expect(HCIStatus(rawValue: 0x2B).name == nil)
        #expect(HCIStatus(rawValue: 0x31).name == nil)
        #expect(HCIStatus(rawValue: 0x33).name == nil)
    }

    @Test func unknownStatusPrintsByNumber() {
        #expect("\(HCIStatus(rawValue: 0xA7))" == "HCI status 0xA7")
    }

    @Test func opcodeSplitsIntoOGFAndOCF() {
        #expect(HCIOpcode.reset.rawValue == 0x0C03)
        #expect(HCIOpcode.leSetScanEnable.rawValue == 0x200C)
        #expect(HCIOpcode.leSetExtendedScanEnable.rawValue == 0x2042)
        #expect(HCIOpcode.readBDADDR.rawValue == 0x1009)
        #expect(HCIOpcode.disconnect.rawValue == 0x0406)
        #expect(HCIOpcode(rawValue: 0x200C).ogf == 0x08)
        #expect(HCIOpcode(rawValue: 0x200C).ocf == 0x000C)
    }

    @Test func opcodesPrintNameAndNumberOrOGFAndOCFWhenUnknown() {
        #expect("\(HCIOpcode.leSetScanEnable)" == "LE Set Scan Enable (0x200C)")
        #expect("\(HCIOpcode(ogf: 0x3F, ocf: 0x0001))" == "OGF 0x3F OCF 0x0001 (0xFC01)")
    }

    @Test func eventCodesAndSubeventsPrintByNameOrNumber() {
        #expect("\(HCIEventCode.commandComplete)" == "Command Complete (0x0E)")
        #expect("\(HCIEventCode(rawValue: 0x57))" == "event 0x57")
        #expect("\(LEMetaSubevent.extendedAdvertisingReport)" == "LE Extended Advertising Report (0x0D)")
        #expect("\(LEMetaSubevent(rawValue: 0x7F))" == "LE subevent 0x7F")
    }

    @Test func errorCarriesCommandAndStatusNamesAndNumbers() {
        let e = HCIError.commandFailed(.leSetScanEnable, .commandDisallowed)
        #expect("\(e)" == "LE Set Scan Enable (0x200C) failed: HCI status 0x0C Command Disallowed")
        #expect(e.code == .commandFailed)
        #expect(e.status == .commandDisallowed)
    }

    @Test func leEventMaskBitIsSubeventMinusOne() {
        #expect(LEEventMask.extendedAdvertisingReport.rawValue == 1 << 12)
        #expect(LEEventMask.advertisingReport.rawValue == 1 << 1)
        #expect(LEFeatures.extendedAdvertising.rawValue == 1 << 12)
    }

    /// docs/SCAN_JSON.md promises `address-type(0xNN)` for a type the specification does not define, as the tshark
    /// oracle prints it; it printed `address-type(0x4)` before.
    @Test func addressTypesPrintTheirNameOrTwoHexDigits() {
        #expect("\(LEAddressType.randomIdentity)" == "random-identity")
        #expect("\(LEAddressType(rawValue: 0x04))" == "address-type(0x04)")
        #expect("\(LEAddressType(rawValue: 0xFE))" == "address-type(0xFE)")
    }
}
