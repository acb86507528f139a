import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// What a capture keeps of a pairing's secrets, in literal bytes: each key's octets zeroed, everything else as it was.
struct CaptureRedactionTests {
    static let key = [UInt8](0xA0...0xAF)
    static let zeros = [UInt8](repeating: 0, count: 16)

    static func redacted(_ type: H4PacketType, _ payload: [UInt8]) -> [UInt8] {
        CaptureRedaction.redact(H4Packet(type: type, payload: payload)).payload
    }

    @Test func smpKeyDistributionKeepsItsCodesAndLosesItsKeys() {
        // ACL handle 0x040, first flushable; L2CAP length 17, CID 0x0006; Identity Information (0x08), then the IRK.
        let head: [UInt8] = [0x40, 0x20, 0x15, 0x00, 0x11, 0x00, 0x06, 0x00]
        #expect(Self.redacted(.acl, head + [0x08] + Self.key) == head + [0x08] + Self.zeros)
        #expect(Self.redacted(.acl, head + [0x06] + Self.key) == head + [0x06] + Self.zeros)  // LTK
        #expect(Self.redacted(.acl, head + [0x0A] + Self.key) == head + [0x0A] + Self.zeros)  // CSRK
        // Central Identification: EDIV (2) and Rand (8).
        let central: [UInt8] = [0x40, 0x20, 0x0F, 0x00, 0x0B, 0x00, 0x06, 0x00, 0x07] + Array(Self.key.prefix(10))
        #expect(Self.redacted(.acl, central) == Array(central.prefix(9)) + [UInt8](repeating: 0, count: 10))
        // The identity address and a pairing request are not secret; nor is ATT on CID 0x0004.
        let address: [UInt8] = [0x40, 0x20, 0x0B, 0x00, 0x07, 0x00, 0x06, 0x00, 0x09, 0x00, 1, 2, 3, 4, 5, 6]
        #expect(Self.redacted(.acl, address) == address)
        let att: [UInt8] = [0x40, 0x20, 0x15, 0x00, 0x11, 0x00, 0x04, 0x00, 0x08] + Self.key
        #expect(Self.redacted(.acl, att) == att)
        // A continuing fragment carries no key distribution (it fits the first fragment).
        let continuing: [UInt8] = [0x40, 0x10, 0x11, 0x00, 0x08] + Self.key
        #expect(Self.redacted(.acl, continuing) == continuing)
    }

    @Test func commandsCarryingKeysLoseThemAndOthersAreUntouched() {
        // LE Long Term Key Request Reply (0x201A): handle, LTK.
        #expect(
            Self.redacted(.command, [0x1A, 0x20, 0x12, 0x40, 0x00] + Self.key)
                == [0x1A, 0x20, 0x12, 0x40, 0x00] + Self.zeros)
        // LE Enable Encryption (0x2019): handle, Rand (8), EDIV (2), LTK: only the LTK goes.
        let header: [UInt8] = [0x19, 0x20, 0x1C, 0x40, 0x00] + [UInt8](1...8) + [9, 10]
        #expect(Self.redacted(.command, header + Self.key) == header + Self.zeros)
        // LE Add Device To Resolving List (0x2027): type, address, peer IRK, local IRK.
        let peer: [UInt8] = [0x27, 0x20, 0x27, 0x01, 1, 2, 3, 4, 5, 6]
        #expect(Self.redacted(.command, peer + Self.key + Self.key) == peer + Self.zeros + Self.zeros)
        // LE Set Scan Enable, an event, and a truncated command: as they were.
        #expect(Self.redacted(.command, [0x0C, 0x20, 0x02, 0x01, 0x00]) == [0x0C, 0x20, 0x02, 0x01, 0x00])
        #expect(Self.redacted(.event, [0x0E, 0x04, 0x01, 0x1A, 0x20, 0x00]) == [0x0E, 0x04, 0x01, 0x1A, 0x20, 0x00])
        #expect(Self.redacted(.command, [0x1A, 0x20, 0x12, 0x40]) == [0x1A, 0x20, 0x12, 0x40])
    }
}
