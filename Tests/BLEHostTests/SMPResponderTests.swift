import Testing

@testable import BLEHost

/// The SMP channel of a host that does not pair (Core v5.4, Vol 3, Part H, §3.5.5), literal commands in and out.
@Suite struct SMPResponderTests {
    @Test func pairingRequestIsRefusedWithPairingNotSupported() {
        var s = SMPResponder()
        // Pairing Request: IO NoInputNoOutput, no OOB, bonding + SC, max key 16, key distribution 0x07/0x07.
        #expect(s.receive([0x01, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07]) == [0x05, 0x05])
        #expect(s.counters.refused == 1)
    }

    @Test func securityRequestIsRefusedWithPairingNotSupported() {
        var s = SMPResponder()
        #expect(s.receive([0x0B, 0x01]) == [0x05, 0x05])
    }

    @Test func otherCommandsOutsideAPairingAreIgnored() {
        var s = SMPResponder()
        #expect(s.receive([0x03] + [UInt8](repeating: 0xAB, count: 16)) == nil)  // Pairing Confirm
        #expect(s.receive([0x05, 0x08]) == nil)  // Pairing Failed from the peer
        #expect(s.receive([]) == nil)
        #expect(s.counters.ignored == 3 && s.counters.refused == 0)
    }
}
