import BLETransport
import Testing

@testable import BLEHCI

/// Extended advertising with legacy PDUs in literal bytes (Core v5.4, Vol 4, Part E, §7.8.53, §7.8.54, §7.8.56), as
/// enrolment sends them; btmon decoded the same bytes from the kernel VM as "Connectable, Scannable, Use legacy
/// advertising PDUs: ADV_IND", 100 ms, channels 37–39, LE 1M.
@Suite struct LEExtendedAdvertisingWireTests {
    @Test func theParametersAreTwentyFiveOctetsWithThreeOctetIntervals() {
        let c = LESetExtendedAdvertisingParametersCommand(
            properties: .legacyConnectableScannable, intervalMin: 0xA0, intervalMax: 0x01_02_03)
        #expect(
            c.packet.h4Bytes == [
                0x01, 0x36, 0x20, 0x19,
                0x00,  // handle
                0x13, 0x00,  // connectable, scannable, legacy PDUs
                0xA0, 0x00, 0x00, 0x03, 0x02, 0x01,  // interval min, max (3 octets each)
                0x07,  // channels 37, 38, 39
                0x00, 0x00,  // own address public; peer address type public
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // no peer
                0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00,  // policy, TX power, PHYs, skip, SID, notifications
            ])
        var r = ByteCursor([0xF8])
        #expect(LESetExtendedAdvertisingParametersCommand.parseReturnParameters(&r) == -8)
    }

    @Test func dataIsOneCompleteFragmentAndEnableNamesOneSetOrNone() {
        #expect(
            LESetExtendedAdvertisingDataCommand([0x02, 0x01, 0x06]).packet.h4Bytes
                == [0x01, 0x37, 0x20, 0x07, 0x00, 0x03, 0x01, 0x03, 0x02, 0x01, 0x06])
        #expect(LESetExtendedAdvertisingDataCommand([UInt8](repeating: 0, count: 40)).data.count == 31)
        #expect(
            LESetExtendedAdvertisingEnableCommand(enable: true).packet.h4Bytes
                == [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(
            LESetExtendedAdvertisingEnableCommand(enable: false).packet.h4Bytes == [0x01, 0x39, 0x20, 0x02, 0x00, 0x00])
    }

    @Test func aControllerHasExtendedAdvertisingOnlyWithAllThreeCommands() {
        var octets = [UInt8](repeating: 0, count: 64)
        octets[36] = 0b0010_1100
        #expect(SupportedCommands(octets: octets).leExtendedAdvertising)
        octets[36] = 0b0000_1100
        #expect(!SupportedCommands(octets: octets).leExtendedAdvertising)
    }
}
