import Crypto

/// The responder's side of `Noise_NNpsk0_25519_ChaChaPoly_SHA256` (The Noise Protocol Framework, rev 34), the
/// handshake ESPHome's native API runs before its encrypted frames:
///
///     NNpsk0:
///       -> psk, e
///       <- e, ee
///
/// with the prologue `NoiseAPIInit\0\0` and the 32-byte pre-shared key from the device's configuration. Pure: bytes
/// in, bytes out; the caller frames them.
struct NoiseHandshake: Sendable {
    static let protocolName = Array("Noise_NNpsk0_25519_ChaChaPoly_SHA256".utf8)
    static let prologue = Array("NoiseAPIInit".utf8) + [0, 0]
    static let dhLength = 32

    /// The SymmetricState (§5.2): chaining key, handshake hash, and the key once one is mixed in.
    private var ck: [UInt8]
    private var h: [UInt8]
    private var cipher: NoiseCipherState?
    private let psk: [UInt8]
    /// The responder's ephemeral private key, as bytes (swift-crypto's key types are not Sendable).
    private let ephemeral: [UInt8]

    /// The transport's two ciphers once the handshake is done (§5.2 Split): the initiator sends with the first.
    struct Transport: Sendable {
        var receiving: NoiseCipherState
        var sending: NoiseCipherState
    }

    enum Failure: Error, Equatable {
        /// The first message is not `e` (32 bytes) and a tag.
        case shortMessage
        /// The initiator's tag did not authenticate: it holds another key (ESPHome says "Handshake MAC failure").
        case authentication
    }

    /// - Parameter ephemeral: the responder's ephemeral key; a new one for every handshake, given only by tests.
    init(psk: [UInt8], ephemeral: Curve25519.KeyAgreement.PrivateKey = .init()) {
        precondition(psk.count == 32, "a Noise PSK is 32 bytes")
        self.psk = psk
        self.ephemeral = Array(ephemeral.rawRepresentation)
        // InitializeSymmetric: a name longer than HASHLEN is hashed.
        h =
            Self.protocolName.count <= 32
            ? Self.protocolName + [UInt8](repeating: 0, count: 32 - Self.protocolName.count)
            : Array(SHA256.hash(data: Self.protocolName))
        ck = h
        mixHash(Self.prologue)
    }

    /// Reads the initiator's `psk, e` message and writes the responder's `e, ee` (both payloads empty, as ESPHome
    /// sends them); returns that message and the transport.
    mutating func respond(to message: ArraySlice<UInt8>) throws(Failure) -> (reply: [UInt8], transport: Transport) {
        guard message.count >= Self.dhLength + NoiseCipherState.tagLength else { throw .shortMessage }
        // -> psk
        mixKeyAndHash(psk)
        // -> e (in a PSK handshake, e is also mixed into the key: §9.2)
        let re = message.prefix(Self.dhLength)
        mixHash(re)
        mixKey(Array(re))
        // The payload (empty), encrypted under the PSK-derived key: here a wrong key shows.
        guard (try? decryptAndHash(message.dropFirst(Self.dhLength))) != nil else { throw .authentication }
        guard let remote = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: re) else {
            throw .authentication
        }
        // <- e
        // Our own 32 bytes, taken from a key: always a valid X25519 private key.
        let ephemeral = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: self.ephemeral)
        let e = Array(ephemeral.publicKey.rawRepresentation)
        mixHash(e)
        mixKey(e)
        // <- ee
        guard let shared = try? ephemeral.sharedSecretFromKeyAgreement(with: remote) else { throw .authentication }
        mixKey(shared.withUnsafeBytes { Array($0) })
        var reply = e
        // Encrypting an empty payload under a fresh key cannot exhaust its nonce.
        reply += try! encryptAndHash([])
        let (k1, k2) = Self.hkdf2(ck, [])
        return (reply, Transport(receiving: NoiseCipherState(key: k1), sending: NoiseCipherState(key: k2)))
    }

    // MARK: - SymmetricState (§5.2)

    private mutating func mixHash(_ data: some Sequence<UInt8>) {
        var hasher = SHA256()
        hasher.update(data: h)
        hasher.update(data: Array(data))
        h = Array(hasher.finalize())
    }

    private mutating func mixKey(_ ikm: [UInt8]) {
        let (newCK, k) = Self.hkdf2(ck, ikm)
        ck = newCK
        cipher = NoiseCipherState(key: k)
    }

    private mutating func mixKeyAndHash(_ ikm: [UInt8]) {
        let out = Self.hkdf3(ck, ikm)
        ck = out.0
        mixHash(out.1)
        cipher = NoiseCipherState(key: out.2)
    }

    private mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseCipherState.Failure) -> [UInt8] {
        // Always keyed here: the psk token comes first.
        let c = try cipher!.encrypt(plaintext, ad: h)
        mixHash(c)
        return c
    }

    private mutating func decryptAndHash(_ ciphertext: ArraySlice<UInt8>) throws(NoiseCipherState.Failure) -> [UInt8] {
        let p = try cipher!.decrypt(ciphertext, ad: h)
        mixHash(ciphertext)
        return p
    }

    // MARK: - HKDF (§4.3), with HMAC-SHA256

    private static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    static func hkdf2(_ ck: [UInt8], _ ikm: [UInt8]) -> ([UInt8], [UInt8]) {
        let temp = hmac(ck, ikm)
        let o1 = hmac(temp, [0x01])
        let o2 = hmac(temp, o1 + [0x02])
        return (o1, o2)
    }

    static func hkdf3(_ ck: [UInt8], _ ikm: [UInt8]) -> ([UInt8], [UInt8], [UInt8]) {
        let temp = hmac(ck, ikm)
        let o1 = hmac(temp, [0x01])
        let o2 = hmac(temp, o1 + [0x02])
        let o3 = hmac(temp, o2 + [0x03])
        return (o1, o2, o3)
    }
}
