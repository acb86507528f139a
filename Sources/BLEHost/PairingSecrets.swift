import Crypto

/// What one pairing needs fresh from a random source: "a device shall generate a new key pair for each pairing"
/// (§2.3.6 would allow reuse only until a pairing fails; we never reuse), and the 128-bit nonce Nb.
public struct PairingSecrets: Sendable {
    /// Most significant octet first.
    public var privateKey: [UInt8]
    public var publicKey: (x: [UInt8], y: [UInt8])
    public var nonce: [UInt8]
    /// Passkey Entry: the passkey to display (000000–999999) and the twenty nonces of its rounds.
    public var passkey: UInt32
    public var passkeyNonces: [[UInt8]]

    public init(
        privateKey: [UInt8], publicKey: (x: [UInt8], y: [UInt8]), nonce: [UInt8], passkey: UInt32 = 0,
        passkeyNonces: [[UInt8]] = []
    ) {
        self.privateKey = privateKey
        self.publicKey = publicKey
        self.nonce = nonce
        self.passkey = passkey
        self.passkeyNonces = passkeyNonces
    }

    /// A new P-256 key pair and nonce from the system's cryptographic random source.
    public static func fresh() -> PairingSecrets {
        let key = P256.KeyAgreement.PrivateKey()
        let raw = Array(key.publicKey.rawRepresentation)
        var rng = SystemRandomNumberGenerator()
        func random16() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &rng) } }
        return PairingSecrets(
            privateKey: Array(key.rawRepresentation), publicKey: (Array(raw[..<32]), Array(raw[32...])),
            nonce: random16(), passkey: UInt32.random(in: 0..<1_000_000, using: &rng),
            passkeyNonces: (0..<20).map { _ in random16() })
    }
}
