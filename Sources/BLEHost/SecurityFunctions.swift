import BLETransport
import Crypto
import _CryptoExtras

/// The LE Secure Connections toolbox (Core v5.4, Vol 3, Part H, §2.2): AES-CMAC and the functions built on it,
/// and the P-256 Diffie-Hellman key. Numbers are most significant octet first, as the specification prints
/// them and as AES takes them; SMP carries them least significant octet first, so the protocol reverses them at
/// the wire.
public enum SecurityFunctions {
    /// AES-CMAC (RFC 4493, §2.4) with the 128-bit `key`: the 128-bit MAC of `message`.
    public static func cmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        precondition(key.count == 16, "AES-CMAC takes a 128-bit key")
        let k = SymmetricKey(data: key)
        // RFC 4493 §2.3: the subkeys from L = AES-128(K, 0^128), doubled in GF(2^128) with R_b = 0x87.
        let l = encrypt([UInt8](repeating: 0, count: 16), key: k)
        let k1 = double(l)
        let k2 = double(k1)
        let blocks = max(1, (message.count + 15) / 16)
        let complete = !message.isEmpty && message.count % 16 == 0
        var x = [UInt8](repeating: 0, count: 16)
        for b in 0..<blocks - 1 {
            for i in 0..<16 { x[i] ^= message[b * 16 + i] }
            x = encrypt(x, key: k)
        }
        // The last block: XORed with K1 when whole, padded with 10…0 and XORed with K2 when not.
        var last = Array(message[((blocks - 1) * 16)...])
        if !complete {
            last.append(0x80)
            last += [UInt8](repeating: 0, count: 16 - last.count)
        }
        let subkey = complete ? k1 : k2
        for i in 0..<16 { x[i] ^= last[i] ^ subkey[i] }
        return encrypt(x, key: k)
    }

    /// f4, the confirm value (§2.2.6): AES-CMAC_X(U || V || Z), with U and V 256-bit x-coordinates.
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) -> [UInt8] {
        precondition(u.count == 32 && v.count == 32, "f4 takes two 256-bit coordinates")
        return cmac(key: x, u + v + [z])
    }

    /// f5, the key generation (§2.2.7): the MacKey and the LTK from the DHKey `w`, both nonces and both devices'
    /// 56-bit addresses (the address type octet, then the address).
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8])
        -> (macKey: [UInt8], ltk: [UInt8])
    {
        precondition(w.count == 32 && a1.count == 7 && a2.count == 7, "f5 takes a 256-bit W and 56-bit addresses")
        let t = cmac(key: f5Salt, w)
        // keyID "btle", and Length = 256 (the two 128-bit keys).
        let rest = f5KeyID + n1 + n2 + a1 + a2 + [0x01, 0x00]
        return (cmac(key: t, [0x00] + rest), cmac(key: t, [0x01] + rest))
    }

    /// f6, the DHKey check (§2.2.8): AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2).
    public static func f6(
        w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8], a1: [UInt8], a2: [UInt8]
    ) -> [UInt8] {
        precondition(ioCap.count == 3 && a1.count == 7 && a2.count == 7, "f6 takes a 24-bit IOcap, 56-bit addresses")
        return cmac(key: w, n1 + n2 + r + ioCap + a1 + a2)
    }

    /// g2, the numeric comparison value (§2.2.9): AES-CMAC_X(U || V || Y) mod 2^32; the six digits a user compares
    /// are that mod 10^6.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) -> UInt32 {
        precondition(u.count == 32 && v.count == 32, "g2 takes two 256-bit coordinates")
        let mac = cmac(key: x, u + v + y)
        var c = ByteCursor(mac[12...])
        return c.readBE32()!
    }

    /// The shared secret of P-256 Diffie-Hellman (§2.3.5.6.1): the DHKey, the x-coordinate of the private key times
    /// the peer's public key; nil when the peer's key is not a point on the curve (its pairing then fails with
    /// DHKey Check Failed, and an invalid-curve attack gets nothing).
    public static func dhKey(privateKey: [UInt8], peerX: [UInt8], peerY: [UInt8]) -> [UInt8]? {
        guard let mine = try? P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey),
            let theirs = try? P256.KeyAgreement.PublicKey(rawRepresentation: peerX + peerY),
            let secret = try? mine.sharedSecretFromKeyAgreement(with: theirs)
        else { return nil }
        return secret.withUnsafeBytes { Array($0) }
    }

    /// SALT of f5 (§2.2.7).
    static let f5Salt: [UInt8] = [
        0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE,
    ]
    /// keyID of f5: "btle" (§2.2.7).
    static let f5KeyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]

    /// e, AES-128 of one block (§2.2.1).
    static func encrypt(_ block: [UInt8], key: SymmetricKey) -> [UInt8] {
        var b = block
        // A 16-octet block and a 128-bit key are all `permute` checks; both are guaranteed here.
        try! AES.permute(&b, key: key)
        return b
    }

    /// Doubling in GF(2^128) (RFC 4493 §2.3): shift left one bit, XOR R_b = 0x87 into the last octet if a bit fell
    /// off the top.
    static func double(_ v: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { out[i] = v[i] << 1 | (i < 15 ? v[i + 1] >> 7 : 0) }
        if v[0] & 0x80 != 0 { out[15] ^= 0x87 }
        return out
    }
}
