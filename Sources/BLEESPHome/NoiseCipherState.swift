import Crypto

/// A Noise CipherState (The Noise Protocol Framework, rev 34, §5.1) for ChaChaPoly: a key and a 64-bit nonce that
/// counts the messages. The nonce is 32 zero bits then the counter little-endian (§12.3).
struct NoiseCipherState: Sendable {
    /// Why a message did not open; ESPHome closes the connection on either.
    enum Failure: Error, Equatable {
        /// The tag did not authenticate: a wrong key, or bytes changed on the way.
        case authentication
        /// 2^64−1 messages under one key (§5.1: the nonce must never wrap).
        case nonceExhausted
    }

    /// The key's bytes (swift-crypto's `SymmetricKey` is not Sendable): a key is made from them per message.
    private let key: [UInt8]
    private var nonce: UInt64 = 0
    static let tagLength = 16

    init(key: [UInt8]) { self.key = key }

    private func chachaNonce() -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: nonce >> (8 * UInt64(i))) }
        // 12 bytes is always a valid ChaChaPoly nonce.
        return try! ChaChaPoly.Nonce(data: bytes)
    }

    /// EncryptWithAd: the ciphertext with its 16-byte tag appended.
    mutating func encrypt(_ plaintext: [UInt8], ad: [UInt8]) throws(Failure) -> [UInt8] {
        guard nonce < .max else { throw .nonceExhausted }
        // Sealing with a valid key and nonce cannot fail.
        let box = try! ChaChaPoly.seal(
            plaintext, using: SymmetricKey(data: key), nonce: chachaNonce(), authenticating: ad)
        nonce += 1
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// DecryptWithAd: the plaintext, or `.authentication` (the nonce does not move, as §5.1 asks).
    mutating func decrypt(_ message: ArraySlice<UInt8>, ad: [UInt8]) throws(Failure) -> [UInt8] {
        guard nonce < .max else { throw .nonceExhausted }
        guard message.count >= Self.tagLength else { throw .authentication }
        let split = message.endIndex - Self.tagLength
        guard
            let box = try? ChaChaPoly.SealedBox(
                nonce: chachaNonce(), ciphertext: message[..<split], tag: message[split...]),
            let plain = try? ChaChaPoly.open(box, using: SymmetricKey(data: key), authenticating: ad)
        else { throw .authentication }
        nonce += 1
        return Array(plain)
    }
}
