/// AES-128 encryption (FIPS-197) and AES-CCM sealing (RFC 3610), written here from the specifications for the
/// simulated sensors that encrypt (BTHome v2). The simulator depends on wire formats only: the gateway decrypts with
/// its own CCM over swift-crypto's AES block, so a frame this code seals and the gateway opens checks both.
/// Speed does not matter here (one block per simulated packet), clarity does.
enum SimAES {
    /// FIPS-197 §5.1.1: the S-box is the multiplicative inverse in GF(2^8) (0 for 0) followed by the affine map
    /// b ⊕ (b ⋘ 1) ⊕ (b ⋘ 2) ⊕ (b ⋘ 3) ⊕ (b ⋘ 4) ⊕ 0x63; computed once rather than typed in.
    static let sbox: [UInt8] = (0..<256).map { x in
        let b = UInt8(x)
        let inverse = b == 0 ? 0 : (1...255).map(UInt8.init).first { multiply($0, b) == 1 }!
        func rotl(_ v: UInt8, _ n: Int) -> UInt8 { v << n | v >> (8 - n) }
        return inverse ^ rotl(inverse, 1) ^ rotl(inverse, 2) ^ rotl(inverse, 3) ^ rotl(inverse, 4) ^ 0x63
    }

    /// GF(2^8) multiplication modulo x^8 + x^4 + x^3 + x + 1 (FIPS-197 §4.2).
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var (a, b, p) = (a, b, UInt8(0))
        while b != 0 {
            if b & 1 != 0 { p ^= a }
            a = a & 0x80 != 0 ? (a << 1) ^ 0x1B : a << 1
            b >>= 1
        }
        return p
    }

    /// The 11 round keys of a 16-octet key (FIPS-197 §5.2), each 16 octets in state order.
    static func roundKeys(_ key: [UInt8]) -> [[UInt8]] {
        precondition(key.count == 16, "AES-128 takes a 16-octet key")
        var w: [[UInt8]] = (0..<4).map { Array(key[($0 * 4)..<($0 * 4 + 4)]) }
        var rcon: UInt8 = 0x01
        for i in 4..<44 {
            var t = w[i - 1]
            if i % 4 == 0 {
                t = [sbox[Int(t[1])] ^ rcon, sbox[Int(t[2])], sbox[Int(t[3])], sbox[Int(t[0])]]
                rcon = multiply(rcon, 2)
            }
            w.append(zip(w[i - 4], t).map { $0 ^ $1 })
        }
        return (0..<11).map { r in w[(4 * r)..<(4 * r + 4)].flatMap { $0 } }
    }

    /// One block, encrypted (FIPS-197 §5.1). State byte `r + 4c` is row r, column c, as the input's order gives.
    static func encrypt(_ block: [UInt8], keys: [[UInt8]]) -> [UInt8] {
        var s = zip(block, keys[0]).map { $0 ^ $1 }
        for round in 1...10 {
            s = s.map { sbox[Int($0)] }
            s = (0..<16).map { i in
                let (r, c) = (i % 4, i / 4)
                return s[r + 4 * ((c + r) % 4)]
            }
            if round < 10 {
                for c in 0..<4 {
                    let a = Array(s[(4 * c)..<(4 * c + 4)])
                    s[4 * c] = multiply(a[0], 2) ^ multiply(a[1], 3) ^ a[2] ^ a[3]
                    s[4 * c + 1] = a[0] ^ multiply(a[1], 2) ^ multiply(a[2], 3) ^ a[3]
                    s[4 * c + 2] = a[0] ^ a[1] ^ multiply(a[2], 2) ^ multiply(a[3], 3)
                    s[4 * c + 3] = multiply(a[0], 3) ^ a[1] ^ a[2] ^ multiply(a[3], 2)
                }
            }
            s = zip(s, keys[round]).map { $0 ^ $1 }
        }
        return s
    }

    /// RFC 3610 §2.2–2.3: the ciphertext followed by the `tagLength`-octet authentication value.
    static func sealCCM(_ message: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], tagLength: Int) -> [UInt8]
    {
        let l = 15 - nonce.count
        precondition((2...8).contains(l) && [4, 6, 8, 10, 12, 14, 16].contains(tagLength) && aad.count < 0xFF00)
        let keys = roundKeys(key)
        func lengthField(_ n: Int, octets: Int) -> [UInt8] {
            (0..<octets).reversed().map { UInt8(truncatingIfNeeded: n >> (8 * $0)) }
        }
        // Authentication: CBC-MAC over B0, the encoded associated data, the message, each padded to blocks.
        let flags = UInt8(aad.isEmpty ? 0 : 0x40) | UInt8((tagLength - 2) / 2) << 3 | UInt8(l - 1)
        var blocks = [flags] + nonce + lengthField(message.count, octets: l)
        if !aad.isEmpty {
            var a = lengthField(aad.count, octets: 2) + aad
            a += [UInt8](repeating: 0, count: (16 - a.count % 16) % 16)
            blocks += a
        }
        blocks += message + [UInt8](repeating: 0, count: (16 - message.count % 16) % 16)
        var x = [UInt8](repeating: 0, count: 16)
        for i in stride(from: 0, to: blocks.count, by: 16) {
            x = encrypt(zip(x, blocks[i..<(i + 16)]).map { $0 ^ $1 }, keys: keys)
        }
        // Encryption: counter mode with A_i = (L − 1) | nonce | i; S_0 encrypts the tag.
        func keystream(_ i: Int) -> [UInt8] { encrypt([UInt8(l - 1)] + nonce + lengthField(i, octets: l), keys: keys) }
        var out: [UInt8] = []
        for (n, i) in stride(from: 0, to: message.count, by: 16).enumerated() {
            let s = keystream(n + 1)
            out += message[i..<min(i + 16, message.count)].enumerated().map { $0.element ^ s[$0.offset] }
        }
        let s0 = keystream(0)
        return out + (0..<tagLength).map { x[$0] ^ s0[$0] }
    }
}
