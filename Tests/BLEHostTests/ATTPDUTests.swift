import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// Wire codes and PDU layouts of Core v5.4, Vol 3, Part F, §3.4, as literal bytes.
@Suite struct ATTPDUTests {
    @Test func errorCodesPrintByNameAndNumberAndUnknownOnesByNumber() {
        #expect(ATTErrorCode.attributeNotFound.description == "ATT 0x0A Attribute Not Found")
        #expect(ATTErrorCode.invalidHandle.description == "ATT 0x01 Invalid Handle")
        #expect(ATTErrorCode.valueNotAllowed.description == "ATT 0x13 Value Not Allowed")
        #expect(ATTErrorCode(0x42).description == "ATT 0x42")
        #expect(ATTErrorCode(0x85).description == "ATT 0x85 Application Error")
        #expect(ATTErrorCode(0xFD).name == "Client Characteristic Configuration Descriptor Improperly Configured")
        // Every code of Table 3.4 has a name.
        for code in UInt8(0x01)...0x13 { #expect(ATTErrorCode(code).name != nil) }
        #expect(ATTErrorCode(0x00).name == nil)
    }

    @Test func opcodesPrintByNameAndKnowTheirResponses() {
        #expect(ATTOpcode.readRequest.description == "ATT opcode 0x0A Read Request")
        #expect(ATTOpcode(0x3F).description == "ATT opcode 0x3F")
        #expect(ATTOpcode.readByGroupTypeRequest.expectedResponse == .readByGroupTypeResponse)
        #expect(ATTOpcode.writeCommand.expectedResponse == nil)
        #expect(ATTOpcode.writeCommand.isCommand)
        #expect(ATTOpcode.readBlobResponse.isResponse)
        #expect(!ATTOpcode.handleValueNotification.isResponse)
    }

    @Test func requestsEncodeToTheirByteLayouts() {
        #expect(ATTPDU.exchangeMTURequest(clientRxMTU: 247) == [0x02, 0xF7, 0x00])
        #expect(ATTPDU.findInformationRequest(start: 0x0007, end: 0x0007) == [0x04, 0x07, 0x00, 0x07, 0x00])
        #expect(
            ATTPDU.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: BluetoothUUID(uuid16: 0x2800))
                == [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        #expect(
            ATTPDU.readByTypeRequest(start: 4, end: 0xFFFF, type: BluetoothUUID(uuid16: 0x2803))
                == [0x08, 0x04, 0x00, 0xFF, 0xFF, 0x03, 0x28])
        let long = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        #expect(
            ATTPDU.readByTypeRequest(start: 1, end: 2, type: long)
                == [
                    0x08, 0x01, 0x00, 0x02, 0x00,
                    0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0, 0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E,
                ])
        #expect(ATTPDU.readRequest(handle: 0x0003) == [0x0A, 0x03, 0x00])
        #expect(ATTPDU.readBlobRequest(handle: 0x0003, offset: 22) == [0x0C, 0x03, 0x00, 0x16, 0x00])
        #expect(ATTPDU.writeRequest(handle: 0x0007, value: [0x01, 0x00]) == [0x12, 0x07, 0x00, 0x01, 0x00])
        #expect(ATTPDU.writeCommand(handle: 0x0010, value: [0xAA]) == [0x52, 0x10, 0x00, 0xAA])
        #expect(ATTPDU.handleValueConfirmation == [0x1E])
        #expect(
            ATTErrorResponse(requestOpcode: .readRequest, handle: 0x0F, code: .readNotPermitted).pdu
                == [0x01, 0x0A, 0x0F, 0x00, 0x02])
    }

    @Test func errorResponseDecodesAndRejectsWrongLengths() throws {
        let e = try ATTErrorResponse.decode([0x01, 0x10, 0x05, 0x00, 0x0A])
        #expect(e == ATTErrorResponse(requestOpcode: .readByGroupTypeRequest, handle: 5, code: .attributeNotFound))
        #expect(
            e.description
                == "ATT 0x0A Attribute Not Found in reply to Read By Group Type Request for handle 0x0005")
        #expect(throws: ATTPDUError.wrongLength(.errorResponse, count: 4)) {
            try ATTErrorResponse.decode([0x01, 0x10, 0x05, 0x00])
        }
        #expect(throws: ATTPDUError.wrongLength(.errorResponse, count: 6)) {
            try ATTErrorResponse.decode([0x01, 0x10, 0x05, 0x00, 0x0A, 0x00])
        }
        #expect(throws: ATTPDUError.wrongOpcode(expected: .errorResponse, got: 0x0B)) {
            try ATTErrorResponse.decode([0x0B, 0x10, 0x05, 0x00, 0x0A])
        }
    }

    @Test func exchangeMTUResponseMustBeThreeOctets() throws {
        #expect(try ATTPDU.decodeExchangeMTUResponse([0x03, 0x9E, 0x00]) == 158)
        #expect(throws: ATTPDUError.wrongLength(.exchangeMTUResponse, count: 2)) {
            try ATTPDU.decodeExchangeMTUResponse([0x03, 0x9E])
        }
    }

    @Test func readByTypeResponseWhoseLengthDoesNotDivideItsDataIsRejected() {
        // Length 7 (a characteristic declaration with a 16-bit UUID) but 8 data octets.
        let pdu: [UInt8] = [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0xFF]
        #expect(throws: ATTPDUError.lengthNotDividing(.readByTypeResponse, length: 7, dataCount: 8)) {
            try ATTPDU.decodeReadByTypeResponse(pdu, range: 1...0xFFFF)
        }
        #expect(throws: ATTPDUError.empty(.readByTypeResponse)) {
            try ATTPDU.decodeReadByTypeResponse([0x09, 0x07], range: 1...0xFFFF)
        }
        #expect(throws: ATTPDUError.unsupportedEntryLength(.readByTypeResponse, length: 1)) {
            try ATTPDU.decodeReadByTypeResponse([0x09, 0x01, 0x00], range: 1...0xFFFF)
        }
    }

    @Test func handleZeroAndOutOfOrderHandlesAreRejected() {
        #expect(throws: ATTPDUError.handleZero(.readByTypeResponse)) {
            try ATTPDU.decodeReadByTypeResponse([0x09, 0x04, 0x00, 0x00, 0xAB, 0xCD], range: 0...0xFFFF)
        }
        // Entries must ascend: 0x0005 then 0x0003.
        #expect(throws: ATTPDUError.handleOutOfRange(.findInformationResponse, handle: 3, range: 1...0xFFFF)) {
            try ATTPDU.decodeFindInformationResponse(
                [0x05, 0x01, 0x05, 0x00, 0x02, 0x29, 0x03, 0x00, 0x03, 0x29], range: 1...0xFFFF)
        }
        // A handle before the start asked for.
        #expect(throws: ATTPDUError.handleOutOfRange(.readByTypeResponse, handle: 2, range: 4...0xFFFF)) {
            try ATTPDU.decodeReadByTypeResponse([0x09, 0x04, 0x02, 0x00, 0xAB, 0xCD], range: 4...0xFFFF)
        }
        #expect(throws: ATTPDUError.handleZero(.handleValueNotification)) {
            try ATTPDU.decodeHandleValue([0x1B, 0x00, 0x00, 0x01], .handleValueNotification)
        }
    }

    @Test func groupWhoseEndPrecedesItsStartIsRejected() {
        let pdu: [UInt8] = [0x11, 0x06, 0x05, 0x00, 0x04, 0x00, 0x1A, 0x18]
        #expect(throws: ATTPDUError.endBeforeStart(.readByGroupTypeResponse, start: 5, end: 4)) {
            try ATTPDU.decodeReadByGroupTypeResponse(pdu, range: 1...0xFFFF)
        }
    }

    @Test func readByGroupTypeResponseDecodesSixteenAndOneHundredTwentyEightBitServices() throws {
        let groups = try ATTPDU.decodeReadByGroupTypeResponse(
            [0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18, 0x04, 0x00, 0xFF, 0xFF, 0x1A, 0x18], range: 1...0xFFFF)
        #expect(
            groups == [
                ATTGroupValue(handle: 1, endGroupHandle: 3, value: [0x00, 0x18]),
                ATTGroupValue(handle: 4, endGroupHandle: 0xFFFF, value: [0x1A, 0x18]),
            ])
        // Nothing may follow a group that ends at 0xFFFF.
        #expect(throws: ATTPDUError.self) {
            try ATTPDU.decodeReadByGroupTypeResponse(
                [0x11, 0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x18, 0x04, 0x00, 0x05, 0x00, 0x1A, 0x18], range: 1...0xFFFF)
        }
    }

    @Test func findInformationDecodesBothFormatsAndRejectsOthers() throws {
        let short = try ATTPDU.decodeFindInformationResponse([0x05, 0x01, 0x07, 0x00, 0x02, 0x29], range: 7...7)
        #expect(short == [ATTHandleUUID(handle: 7, uuid: BluetoothUUID(uuid16: 0x2902))])
        let longBytes: [UInt8] = [
            0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
            0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E,
        ]
        let long = try ATTPDU.decodeFindInformationResponse([0x05, 0x02, 0x20, 0x00] + longBytes, range: 0x20...0x30)
        #expect(long.map(\.uuid.description) == ["6E400001-B5A3-F393-E0A9-E50E24DCCA9E"])
        #expect(throws: ATTPDUError.unknownFormat(0x03)) {
            try ATTPDU.decodeFindInformationResponse([0x05, 0x03, 0x07, 0x00, 0x02, 0x29], range: 1...0xFFFF)
        }
        #expect(throws: ATTPDUError.lengthNotDividing(.findInformationResponse, length: 4, dataCount: 5)) {
            try ATTPDU.decodeFindInformationResponse([0x05, 0x01, 0x07, 0x00, 0x02, 0x29, 0x08], range: 1...0xFFFF)
        }
    }

    @Test func characteristicValueHandleOutsideItsServiceIsRejected() throws {
        // Declaration at 0x0005 whose value handle 0x0020 lies beyond the service 0x0004–0x000A.
        let entry = ATTHandleValue(handle: 5, value: [0x12, 0x20, 0x00, 0x6E, 0x2A])
        #expect(throws: ATTPDUError.valueHandleOutsideService(declaration: 5, valueHandle: 0x20, service: 4...10)) {
            try GATTClient.declaration(entry, in: 4...10)
        }
        // A value handle before its own declaration.
        #expect(throws: ATTPDUError.valueHandleOutsideService(declaration: 5, valueHandle: 5, service: 4...10)) {
            try GATTClient.declaration(ATTHandleValue(handle: 5, value: [0x12, 0x05, 0x00, 0x6E, 0x2A]), in: 4...10)
        }
        let good = try GATTClient.declaration(entry.with(value: [0x12, 0x06, 0x00, 0x6E, 0x2A]), in: 4...10)
        #expect(good.valueHandle == 6 && good.properties == [.read, .notify])
        #expect(good.uuid == BluetoothUUID(uuid16: 0x2A6E))
        #expect(throws: ATTPDUError.unsupportedEntryLength(.readByTypeResponse, length: 6)) {
            try GATTClient.declaration(ATTHandleValue(handle: 5, value: [0x12, 0x06, 0x00, 0x6E]), in: 4...10)
        }
    }

    /// Every strict prefix of a valid response is either rejected or decodes to fewer entries: a PDU cut
    /// short never yields the whole answer or traps.
    @Test func truncatedResponsesNeverDecodeAsWhole() throws {
        let full: [UInt8] = [
            0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A,
            0x05, 0x00, 0x12, 0x06, 0x00, 0x6E, 0x2A,
        ]
        let whole = try ATTPDU.decodeReadByTypeResponse(full, range: 1...0xFFFF)
        #expect(whole.count == 2)
        for n in 0..<full.count {
            let part = try? ATTPDU.decodeReadByTypeResponse(Array(full.prefix(n)), range: 1...0xFFFF)
            #expect(part == nil || part!.count < whole.count, "prefix of \(n) octets")
        }
        let group: [UInt8] = [0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18]
        for n in 0..<group.count {
            #expect((try? ATTPDU.decodeReadByGroupTypeResponse(Array(group.prefix(n)), range: 1...0xFFFF)) == nil)
        }
        let error: [UInt8] = [0x01, 0x0A, 0x03, 0x00, 0x0A]
        for n in 0..<error.count { #expect((try? ATTErrorResponse.decode(Array(error.prefix(n)))) == nil) }
    }
}

extension ATTHandleValue {
    func with(value: [UInt8]) -> ATTHandleValue { ATTHandleValue(handle: handle, value: value) }
}
