import Crypto

/// What one pairing needs fresh from a random source: "a device shall generate a new key pair for each pairing"
/// (§2.3.6 would allow reuse only until a pairing fails; we never reuse), and the 128-bit nonce Nb.
public struct PairingSecrets: Sendable {
    /// Most significant octet first.
    public var privateKey: [UInt8]
    public var publicKey: (x: [UInt8], y: [UInt8])
    public var nonce: [UInt8]

    public init(privateKey: [UInt8], publicKey: (x: [UInt8], y: [UInt8]), nonce: [UInt8]) {
        self.privateKey = privateKey
        self.publicKey = publicKey
        self.nonce = nonce
    }

    /// A new P-256 key pair and nonce from the system's cryptographic random source.
    public static func fresh() -> PairingSecrets {
        let key = P256.KeyAgreement.PrivateKey()
        let raw = Array(key.publicKey.rawRepresentation)
        var rng = SystemRandomNumberGenerator()
        let nonce = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
        return PairingSecrets(
            privateKey: Array(key.rawRepresentation), publicKey: (Array(raw[..<32]), Array(raw[32...])), nonce: nonce)
    }
}
