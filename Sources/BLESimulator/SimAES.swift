import Crypto
import _CryptoExtras

/// AES-CCM sealing (RFC 3610), written here from the specification for the simulated sensors that encrypt (BTHome v2,
/// MiBeacon), over swift-crypto's AES-128 block (`AES.permute`, BoringSSL's). The simulator depends on wire formats
/// only: the gateway opens with its own CCM (BLEDomain's SensorCCM), so a frame this code seals and the gateway opens
/// checks both readings of the mode. Speed does not matter here (one block per simulated packet), clarity does.
enum SimAES {
    /// One block, encrypted under a 16-octet key (FIPS-197).
    static func encrypt(_ block: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(block.count == 16 && key.count == 16, "AES-128 takes a 16-octet block and key")
        var b = block
        // A 16-octet block and a 128-bit key are all `permute` checks; both are guaranteed above.
        try! AES.permute(&b, key: SymmetricKey(data: key))
        return b
    }

    /// RFC 3610 §2.2–2.3: the ciphertext followed by the `tagLength`-octet authentication value.
    static func sealCCM(_ message: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], tagLength: Int) -> [UInt8]
    {
        let l = 15 - nonce.count
        precondition((2...8).contains(l) && [4, 6, 8, 10, 12, 14, 16].contains(tagLength) && aad.count < 0xFF00)
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
            x = encrypt(zip(x, blocks[i..<(i + 16)]).map { $0 ^ $1 }, key: key)
        }
        // Encryption: counter mode with A_i = (L − 1) | nonce | i; S_0 encrypts the tag.
        func keystream(_ i: Int) -> [UInt8] { encrypt([UInt8(l - 1)] + nonce + lengthField(i, octets: l), key: key) }
        var out: [UInt8] = []
        for (n, i) in stride(from: 0, to: message.count, by: 16).enumerated() {
            let s = keystream(n + 1)
            out += message[i..<min(i + 16, message.count)].enumerated().map { $0.element ^ s[$0.offset] }
        }
        let s0 = keystream(0)
        return out + (0..<tagLength).map { x[$0] ^ s0[$0] }
    }
}
