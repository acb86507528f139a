import Crypto
import Foundation
import _CryptoExtras

/// AES-CCM decryption (RFC 3610 / NIST SP 800-38C) built on the AES block, as `ah` is: the crypto
/// library offers GCM and CBC but not CCM, which BTHome v2 and Xiaomi MiBeacon v4/v5 use.
///
/// Only what those formats need: a 16-octet key, nonce of 15 − L octets, an M-octet tag, at most
/// one block of associated data. Runs only for encrypted frames, so allocating its blocks is fine.
public enum SensorCCM {
    /// The plaintext, or nil when the tag does not verify ("the message is not authentic": nothing
    /// of it may be used).
    public static func open(
        ciphertext: some Collection<UInt8>, tag: some Collection<UInt8>, nonce: [UInt8], aad: [UInt8] = [],
        key: SymmetricKey
    ) -> [UInt8]? {
        let m = tag.count
        let l = 15 - nonce.count
        guard (4...16).contains(m), m % 2 == 0, (2...8).contains(l), aad.count < 14, key.bitCount == 128 else {
            return nil
        }
        let c = Array(ciphertext)
        // Counter blocks A_i = flags(L−1) | nonce | i; S_i = E(K, A_i); P = C ⊕ S_1, S_2, …
        func counterBlock(_ i: Int) -> [UInt8] {
            var a = [UInt8(l - 1)] + nonce + [UInt8](repeating: 0, count: l)
            var v = i
            for k in stride(from: 15, to: 15 - l, by: -1) {
                a[k] = UInt8(truncatingIfNeeded: v)
                v >>= 8
            }
            return a
        }
        var plain = [UInt8](repeating: 0, count: c.count)
        var offset = 0
        var i = 1
        while offset < c.count {
            var s = counterBlock(i)
            try? AES.permute(&s, key: key)
            for k in 0..<min(16, c.count - offset) { plain[offset + k] = c[offset + k] ^ s[k] }
            offset += 16
            i += 1
        }
        // CBC-MAC over B_0 = flags | nonce | len(P), then the associated data, then P, zero-padded.
        var b0 = [UInt8((aad.isEmpty ? 0 : 0x40) | ((m - 2) / 2) << 3 | (l - 1))] + nonce
        b0 += (0..<l).reversed().map { UInt8(truncatingIfNeeded: c.count >> (8 * $0)) }
        var x = b0
        try? AES.permute(&x, key: key)
        func absorb(_ block: ArraySlice<UInt8>) {
            for k in 0..<block.count { x[k] ^= block[block.startIndex + k] }
            try? AES.permute(&x, key: key)
        }
        if !aad.isEmpty {
            absorb(([0, UInt8(aad.count)] + aad)[...])
        }
        var p = 0
        while p < plain.count {
            absorb(plain[p..<min(p + 16, plain.count)])
            p += 16
        }
        var s0 = counterBlock(0)
        try? AES.permute(&s0, key: key)
        // Compare every octet (no early exit): how far a forged tag matched stays unobservable.
        var diff: UInt8 = 0
        for (k, t) in tag.enumerated() { diff |= (x[k] ^ s0[k]) ^ t }
        return diff == 0 ? plain : nil
    }

    /// The inverse, for the simulator and tests: ciphertext followed by the M-octet tag.
    public static func seal(
        plaintext: [UInt8], nonce: [UInt8], aad: [UInt8] = [], tagLength m: Int, key: SymmetricKey
    ) -> [UInt8] {
        let l = 15 - nonce.count
        func counterBlock(_ i: Int) -> [UInt8] {
            var a = [UInt8(l - 1)] + nonce + [UInt8](repeating: 0, count: l)
            var v = i
            for k in stride(from: 15, to: 15 - l, by: -1) {
                a[k] = UInt8(truncatingIfNeeded: v)
                v >>= 8
            }
            return a
        }
        var x = [UInt8((aad.isEmpty ? 0 : 0x40) | ((m - 2) / 2) << 3 | (l - 1))] + nonce
        x += (0..<l).reversed().map { UInt8(truncatingIfNeeded: plaintext.count >> (8 * $0)) }
        try? AES.permute(&x, key: key)
        func absorb(_ block: ArraySlice<UInt8>) {
            for k in 0..<block.count { x[k] ^= block[block.startIndex + k] }
            try? AES.permute(&x, key: key)
        }
        if !aad.isEmpty { absorb(([0, UInt8(aad.count)] + aad)[...]) }
        var p = 0
        while p < plaintext.count {
            absorb(plaintext[p..<min(p + 16, plaintext.count)])
            p += 16
        }
        var out = plaintext
        var offset = 0
        var i = 1
        while offset < out.count {
            var s = counterBlock(i)
            try? AES.permute(&s, key: key)
            for k in 0..<min(16, out.count - offset) { out[offset + k] ^= s[k] }
            offset += 16
            i += 1
        }
        var s0 = counterBlock(0)
        try? AES.permute(&s0, key: key)
        return out + (0..<m).map { x[$0] ^ s0[$0] }
    }

    /// `seal` with the key as its 16 octets, for callers that do not import the crypto library (the simulator's
    /// tools, the benchmarks).
    public static func seal(
        plaintext: [UInt8], nonce: [UInt8], aad: [UInt8] = [], tagLength m: Int, keyOctets: [UInt8]
    ) -> [UInt8] {
        seal(plaintext: plaintext, nonce: nonce, aad: aad, tagLength: m, key: SymmetricKey(data: keyOctets))
    }
}
