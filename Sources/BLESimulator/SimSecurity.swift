import Crypto

/// The simulated phone's side of the Security Manager's cryptography (Core v5.4, Vol 3, Part H, §2.2), written
/// here from the specification apart from the gateway's: a pairing between the two succeeds only if both read the
/// specification the same way. The AES block and the P-256 arithmetic come from swift-crypto. Values are most significant octet first, as the specification writes them.
enum SimSecurity {
    /// AES-CMAC (RFC 4493 §2.4).
    static func cmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        func double(_ v: [UInt8]) -> [UInt8] {
            var out = (0..<16).map { i in v[i] << 1 | (i < 15 ? v[i + 1] >> 7 : 0) }
            if v[0] & 0x80 != 0 { out[15] ^= 0x87 }
            return out
        }
        let k1 = double(SimAES.encrypt([UInt8](repeating: 0, count: 16), key: key))
        let k2 = double(k1)
        let n = max(1, (message.count + 15) / 16)
        let complete = !message.isEmpty && message.count % 16 == 0
        var last = Array(message[((n - 1) * 16)...])
        if complete {
            last = zip(last, k1).map { $0 ^ $1 }
        } else {
            last += [0x80] + [UInt8](repeating: 0, count: 15 - last.count)
            last = zip(last, k2).map { $0 ^ $1 }
        }
        var x = [UInt8](repeating: 0, count: 16)
        for i in 0..<(n - 1) {
            x = SimAES.encrypt(zip(x, message[(i * 16)..<(i * 16 + 16)]).map { $0 ^ $1 }, key: key)
        }
        return SimAES.encrypt(zip(x, last).map { $0 ^ $1 }, key: key)
    }

    /// f4(U, V, X, Z) = AES-CMAC_X(U || V || Z) (§2.2.6).
    static func f4(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ z: UInt8) -> [UInt8] { cmac(key: x, u + v + [z]) }

    /// f5(W, N1, N2, A1, A2) = MacKey || LTK (§2.2.7).
    static func f5(_ w: [UInt8], _ n1: [UInt8], _ n2: [UInt8], _ a1: [UInt8], _ a2: [UInt8]) -> (
        macKey: [UInt8], ltk: [UInt8]
    ) {
        let salt: [UInt8] = [
            0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE,
        ]
        let t = cmac(key: salt, w)
        let body = Array("btle".utf8) + n1 + n2 + a1 + a2 + [0x01, 0x00]
        return (cmac(key: t, [0x00] + body), cmac(key: t, [0x01] + body))
    }

    /// f6(W, N1, N2, R, IOcap, A1, A2) (§2.2.8).
    static func f6(
        _ w: [UInt8], _ n1: [UInt8], _ n2: [UInt8], _ r: [UInt8], _ io: [UInt8], _ a1: [UInt8], _ a2: [UInt8]
    ) -> [UInt8] {
        cmac(key: w, n1 + n2 + r + io + a1 + a2)
    }

    /// g2(U, V, X, Y) mod 10^6: the six digits Numeric Comparison shows (§2.2.9).
    static func g2(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ y: [UInt8]) -> UInt32 {
        cmac(key: x, u + v + y)[12...].reduce(0) { $0 << 8 | UInt32($1) } % 1_000_000
    }

    /// ah(k, r) = e(k, r') mod 2^24, r' = 104 zero bits || r (§2.2.2): the hash of a resolvable private address.
    static func ah(irk: [UInt8], prand: UInt32) -> UInt32 {
        let block =
            [UInt8](repeating: 0, count: 13) + [
                UInt8(prand >> 16 & 0xFF), UInt8(prand >> 8 & 0xFF), UInt8(prand & 0xFF),
            ]
        let e = SimAES.encrypt(block, key: irk)
        return UInt32(e[13]) << 16 | UInt32(e[14]) << 8 | UInt32(e[15])
    }

    /// A P-256 key pair: the private scalar and the public key's coordinates.
    static func keyPair(seed: [UInt8]) -> (privateKey: [UInt8], x: [UInt8], y: [UInt8]) {
        // A seeded scalar keeps a scenario's run repeatable; a seed that is not a valid scalar (0, or ≥ n) is
        // hashed until it is, which for SHA-256 output happens at once with overwhelming probability.
        var s = Array(SHA256.hash(data: seed))
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: s) {
                let raw = Array(key.publicKey.rawRepresentation)
                return (Array(key.rawRepresentation), Array(raw[..<32]), Array(raw[32...]))
            }
            s = Array(SHA256.hash(data: s))
        }
    }

    /// The DHKey (§2.3.5.6.1), or nil for a peer key off the curve.
    static func dhKey(_ privateKey: [UInt8], peerX: [UInt8], peerY: [UInt8]) -> [UInt8]? {
        guard let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey),
            let theirs = try? P256.KeyAgreement.PublicKey(rawRepresentation: peerX + peerY),
            let secret = try? key.sharedSecretFromKeyAgreement(with: theirs)
        else { return nil }
        return secret.withUnsafeBytes { Array($0) }
    }
}
