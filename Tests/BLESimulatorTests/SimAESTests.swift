import Testing

@testable import BLESimulator

/// The simulator's CCM (its own) and the AES block under it (swift-crypto's) against the specifications' vectors.
@Suite struct SimAESTests {
    static func hex(_ s: String) -> [UInt8] {
        let d = Array(s.filter(\.isHexDigit))
        return stride(from: 0, to: d.count, by: 2).map { UInt8(String(d[$0..<($0 + 2)]), radix: 16)! }
    }

    /// FIPS-197 Appendix C.1 (AES-128): the block the simulator's CCM and CMAC are built on.
    @Test func aBlockEncryptsAsFIPS197AppendixC1() {
        #expect(
            SimAES.encrypt(
                Self.hex("00112233445566778899aabbccddeeff"), key: Self.hex("000102030405060708090a0b0c0d0e0f"))
                == Self.hex("69c4e0d86a7b0430d8cdb78070b4c55a"))
    }

    /// RFC 3610 §8, Packet Vector #1: 8 octets of associated data, 23 of message, an 8-octet tag.
    @Test func ccmSealsRFC3610PacketVector1() {
        let sealed = SimAES.sealCCM(
            Self.hex("08090A0B0C0D0E0F101112131415161718191A1B1C1D1E"),
            key: Self.hex("C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF"), nonce: Self.hex("00000003020100A0A1A2A3A4A5"),
            aad: Self.hex("0001020304050607"), tagLength: 8)
        #expect(sealed == Self.hex("588C979A61C663D2F066D0C2C0F989806D5F6B61DAC38417E8D12CFDF926E0"))
    }
}
