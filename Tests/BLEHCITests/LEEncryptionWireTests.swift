import BLETransport
import Testing

@testable import BLEHCI

/// The peripheral's side of LE encryption in literal bytes (Core v5.4, Vol 4, Part E, §7.7.8, §7.7.65.5, §7.8.25,
/// §7.8.26): what enrolment answers when a phone encrypts the link it paired on.
@Suite struct LEEncryptionWireTests {
    @Test func aLongTermKeyRequestCarriesItsHandleRandomAndDiversifier() {
        // LE Meta, subevent 0x05, handle 0x0040, Random_Number 0x1122334455667788 (LSB first), EDIV 0xABCD.
        let e = parseEvent([
            0x04, 0x3E, 0x0D, 0x05, 0x40, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xCD, 0xAB,
        ])
        guard case .leLongTermKeyRequest(let h, let random, let ediv) = e else {
            Issue.record("not parsed: \(String(describing: e))")
            return
        }
        #expect(h == 0x0040 && random == 0x1122_3344_5566_7788 && ediv == 0xABCD)
        #expect(parseEvent([0x04, 0x3E, 0x0C, 0x05, 0x40, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0]) == nil, "short")
    }

    @Test func encryptionChangeSaysWhetherTheLinkIsEncrypted() {
        guard case .encryptionChange(let on) = parseEvent([0x04, 0x08, 0x04, 0x00, 0x40, 0x00, 0x01]) else {
            Issue.record("not parsed")
            return
        }
        #expect(on == .init(status: .success, handle: 0x0040, enabled: true))
        guard case .encryptionChange(let failed) = parseEvent([0x04, 0x08, 0x04, 0x06, 0x40, 0x00, 0x00]) else {
            Issue.record("not parsed")
            return
        }
        #expect(failed.status == .pinOrKeyMissing && !failed.enabled)
    }

    @Test func theKeyGoesLeastSignificantOctetFirst() {
        let ltk: [UInt8] = (0..<16).map { UInt8($0) }
        #expect(
            LELongTermKeyRequestReplyCommand(handle: 0x0040, longTermKey: ltk).packet.h4Bytes
                == [0x01, 0x1A, 0x20, 0x12, 0x40, 0x00] + ltk.reversed())
        #expect(
            LELongTermKeyRequestNegativeReplyCommand(handle: 0x0040).packet.h4Bytes
                == [0x01, 0x1B, 0x20, 0x02, 0x40, 0x00])
        #expect(HCIOpcode.leLongTermKeyRequestReply.name == "LE Long Term Key Request Reply")
    }
}
