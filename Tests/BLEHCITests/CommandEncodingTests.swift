import BLETransport
import Testing

@testable import BLEHCI

/// Command packets against literal bytes: Core v5.4, Vol 4, Part E layouts, as btmon shows them.
@Suite struct CommandEncodingTests {
    @Test func resetIsOpcode0C03WithNoParameters() {
        #expect(ResetCommand().packet.h4Bytes == [0x01, 0x03, 0x0C, 0x00])
    }

    @Test func leSetScanParametersLaysOutTypeIntervalWindowOwnAddressPolicy() {
        // btmon: LE Set Scan Parameters (0x08|0x000b) plen 7, Type: Active (0x01), Interval: 10.000 msec (0x0010),
        // Window: 10.000 msec (0x0010), Own address type: Public (0x00), Filter policy: Accept all (0x00)
        let c = LESetScanParametersCommand(scanType: .active, interval: 0x0010, window: 0x0010)
        #expect(c.packet.h4Bytes == [0x01, 0x0B, 0x20, 0x07, 0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00])
    }

    @Test func leSetScanEnableWithDuplicateFilteringOff() {
        #expect(LESetScanEnableCommand(enable: true).packet.h4Bytes == [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
        #expect(LESetScanEnableCommand(enable: false).packet.h4Bytes == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00])
    }

    @Test func extendedScanParametersListsOnePHYBlockPerBitInBitOrder() {
        let c = LESetExtendedScanParametersCommand(phys: [
            .leCoded(.passive, interval: 0x0030, window: 0x0030), .le1M(.active, interval: 0x00A0, window: 0x0050),
        ])
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x41, 0x20, 0x0D, 0x00, 0x00, 0x05,
                0x01, 0xA0, 0x00, 0x50, 0x00,
                0x00, 0x30, 0x00, 0x30, 0x00,
            ])
    }

    @Test func extendedScanEnableCarriesDurationAndPeriod() {
        let c = LESetExtendedScanEnableCommand(enable: true, filterDuplicates: 0, duration: 0x0064, period: 0)
        #expect(c.packet.h4Bytes == [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00])
    }

    @Test func eventMasksAreEightLittleEndianOctets() {
        let c = SetEventMaskCommand([.disconnectionComplete, .hardwareError, .leMeta])
        #expect(c.packet.h4Bytes == [0x01, 0x01, 0x0C, 0x08, 0x10, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20])
        let le = LESetEventMaskCommand([.advertisingReport, .extendedAdvertisingReport])
        #expect(le.packet.h4Bytes == [0x01, 0x01, 0x20, 0x08, 0x02, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    @Test func advertisingDataIsPaddedTo31Octets() {
        let bytes = LESetAdvertisingDataCommand([0x02, 0x01, 0x06]).packet.h4Bytes
        #expect(bytes.count == 4 + 32)
        #expect(Array(bytes.prefix(8)) == [0x01, 0x08, 0x20, 0x20, 0x03, 0x02, 0x01, 0x06])
        #expect(bytes.dropFirst(8).allSatisfy { $0 == 0 })
    }

    @Test func advertisingParametersAreFifteenOctets() {
        let c = LESetAdvertisingParametersCommand(intervalMin: 0x0800, intervalMax: 0x0800, advertisingType: 3)
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x06, 0x20, 0x0F, 0x00, 0x08, 0x00, 0x08, 0x03, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00,
            ])
    }

    @Test func createConnectionIsTwentyFiveOctetsAndEndsInCommandStatus() {
        let c = LECreateConnectionCommand(
            peerAddressType: .random, peerAddress: BDAddress("C0:11:22:33:44:55")!,
            connection: LEConnectionParameters(
                intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: 0,
                supervisionTimeout: 0x002A))
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x0D, 0x20, 0x19, 0x60, 0x00, 0x60, 0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x00,
                0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x00, 0x00,
            ])
        #expect(LECreateConnectionCommand.completion == .commandStatus)
    }

    @Test func extendedCreateConnectionCarriesOnePhysParametersForLE1M() {
        let c = LEExtendedCreateConnectionCommand(
            peerAddressType: .public, peerAddress: BDAddress("00:1B:DC:10:00:01")!,
            connection: LEConnectionParameters(
                intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: 0,
                supervisionTimeout: 0x01F4))
        // §7.8.66: 10 octets of addressing and PHYs, then 16 per PHY: Parameter_Total_Length 26.
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x43, 0x20, 0x1A, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x01,
                0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00, 0x00, 0x00,
            ])
        #expect(LEExtendedCreateConnectionCommand.completion == .commandStatus)
    }

    @Test func disconnectCarriesHandleAndReason() {
        #expect(DisconnectCommand(handle: 0x0040).packet.h4Bytes == [0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13])
    }

    @Test func connectionUpdateIsFourteenOctets() {
        let c = LEConnectionUpdateCommand(
            handle: 0x0001,
            parameters: LEConnectionParameters(
                intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 0x0048))
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x13, 0x20, 0x0E, 0x01, 0x00, 0x06, 0x00, 0x06, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00,
                0x00,
            ])
    }

    @Test func remoteParameterRequestReplyIsHandleThenSixParameterFields() {
        // §7.8.31, opcode 0x2020: Connection_Handle, Interval_Min, Interval_Max, Max_Latency, Timeout,
        // Min_CE_Length, Max_CE_Length, two octets each (14). Every field distinct so a swap shows.
        let c = LERemoteConnectionParameterRequestReplyCommand(
            handle: 0x0040,
            parameters: LEConnectionParameters(
                intervalMin: 0x0010, intervalMax: 0x0020, maxLatency: 0x0004, supervisionTimeout: 0x0100,
                minCELength: 0x0002, maxCELength: 0x0003))
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x20, 0x20, 0x0E, 0x40, 0x00, 0x10, 0x00, 0x20, 0x00, 0x04, 0x00, 0x00, 0x01, 0x02, 0x00, 0x03,
                0x00,
            ])
        // Return parameters: Status (1), Connection_Handle (2).
        let response = LERemoteConnectionParameterRequestReplyCommand.parseResponse([0x00, 0x40, 0x00][...])
        #expect((try? response?.get()) == 0x0040)
    }

    @Test func remoteParameterRequestNegativeReplyIsHandleThenReason() {
        // §7.8.32, opcode 0x2021: Connection_Handle (2), Reason (1) = 0x3B Unacceptable Connection Parameters.
        #expect(
            LERemoteConnectionParameterRequestNegativeReplyCommand(handle: 0x0040).packet.h4Bytes == [
                0x01, 0x21, 0x20, 0x03, 0x40, 0x00, 0x3B,
            ])
        let response = LERemoteConnectionParameterRequestNegativeReplyCommand.parseResponse([0x00, 0x40, 0x00][...])
        #expect((try? response?.get()) == 0x0040)
    }

    @Test func commandPacketParsesBackWhatWasBuilt() {
        let bytes = LESetScanEnableCommand(enable: true).packet.payload
        let p = HCICommandPacket.parse(bytes[...])
        #expect(p?.opcode == .leSetScanEnable)
        #expect(p.map { Array($0.parameters) } == [0x01, 0x00])
        #expect(p?.h4Packet.payload == bytes)
    }

    @Test func commandPacketWithWrongLengthIsRejected() {
        #expect(HCICommandPacket.parse([0x03, 0x0C, 0x01][...]) == nil)
        #expect(HCICommandPacket.parse([0x03, 0x0C, 0x00, 0x00][...]) == nil)
        #expect(HCICommandPacket.parse([0x03][...]) == nil)
    }
}
