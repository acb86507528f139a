import BLETransport
import Testing

@testable import BLEHost

/// The LE Secure Connections functions against published data: RFC 4493's AES-CMAC examples, and the sample data
/// of Core v5.4, Vol 3, Part H, Appendix D (D.1 P-256, D.2 f4, D.3 f5, D.4 f6, D.5 g2), written as printed there,
/// most significant octet first, spaces dropped.
@Suite struct SecurityFunctionsTests {
    static func h(_ digits: String) -> [UInt8] {
        HexDigits.parseDigits(digits.filter { $0 != " " })!
    }

    // D.1: device A's and B's key pairs and their DHKey.
    static let privateA = h("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    static let publicAX = h("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let publicAY = h("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")
    static let privateB = h("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let publicBX = h("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
    static let publicBY = h("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
    static let dhKey = h("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
    static let n1 = h("d5cb8454 d177733e ffffb2ec 712baeab")
    static let n2 = h("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
    static let a1 = h("00561237 37bfce")
    static let a2 = h("00a71370 2dcfc1")

    @Test func aesCMACMatchesRFC4493sExamples() {
        let key = Self.h("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        let m = Self.h(
            "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51"
                + "30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")
        // Example 1: the empty message (one padded block); 2: one whole block; 3: 40 octets (the last one padded);
        // 4: 64 octets (four whole blocks).
        #expect(SecurityFunctions.cmac(key: key, []) == Self.h("bb1d6929 e9593728 7fa37d12 9b756746"))
        #expect(SecurityFunctions.cmac(key: key, Array(m[..<16])) == Self.h("070a16b4 6b4d4144 f79bdd9d d04a287c"))
        #expect(SecurityFunctions.cmac(key: key, Array(m[..<40])) == Self.h("dfa66747 de9ae630 30ca3261 1497c827"))
        #expect(SecurityFunctions.cmac(key: key, m) == Self.h("51f0bebf 7e3b9d92 fc497417 79363cfe"))
    }

    @Test func bothSidesOfTheSampleKeyPairsComputeTheSampleDHKey() {
        let seenByA = SecurityFunctions.dhKey(privateKey: Self.privateA, peerX: Self.publicBX, peerY: Self.publicBY)
        let seenByB = SecurityFunctions.dhKey(privateKey: Self.privateB, peerX: Self.publicAX, peerY: Self.publicAY)
        #expect(seenByA == Self.dhKey)
        #expect(seenByB == Self.dhKey)
    }

    @Test func aPeerKeyOffTheCurveGivesNoDHKey() {
        var y = Self.publicBY
        y[31] ^= 0x01
        #expect(SecurityFunctions.dhKey(privateKey: Self.privateA, peerX: Self.publicBX, peerY: y) == nil)
    }

    @Test func f4MatchesTheSampleData() {
        // D.2: U and V are the 256-bit inputs as printed (V is not B's public key there), X is N1, Z = 0.
        let v = Self.privateB
        #expect(
            SecurityFunctions.f4(u: Self.publicAX, v: v, x: Self.n1, z: 0x00)
                == Self.h("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    @Test func f5MatchesTheSampleData() {
        let keys = SecurityFunctions.f5(w: Self.dhKey, n1: Self.n1, n2: Self.n2, a1: Self.a1, a2: Self.a2)
        #expect(keys.macKey == Self.h("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(keys.ltk == Self.h("69867911 69d7cd23 980522b5 94750a38"))
    }

    @Test func f6MatchesTheSampleData() {
        let macKey = Self.h("2965f176 a1084a02 fd3f6a20 ce636e20")
        let r = Self.h("12a3343b b453bb54 08da42d2 0c2d0fc8")
        let ioCap = Self.h("010102")
        #expect(
            SecurityFunctions.f6(w: macKey, n1: Self.n1, n2: Self.n2, r: r, ioCap: ioCap, a1: Self.a1, a2: Self.a2)
                == Self.h("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    @Test func g2MatchesTheSampleDataAndGivesSixDigits() {
        let value = SecurityFunctions.g2(u: Self.publicAX, v: Self.privateB, x: Self.n1, y: Self.n2)
        #expect(value == 0x2f9e_d5ba)
        #expect(value % 1_000_000 == 938_554)
    }
}
