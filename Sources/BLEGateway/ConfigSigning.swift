import Crypto
import Foundation

/// Signed remote documents (Ed25519, RFC 8032). The signed form wraps the document's exact bytes, so nothing has
/// to be canonicalised before checking:
///
///     {"document": "<base64 of the JSON document>", "signature": "<base64 of Ed25519(document bytes)>"}
///
/// Off by default. With `remote_config.public_key_file` set, only documents signed by that key apply, they must carry
/// a `version`, and a version lower than the one in force on that layer is refused (an old signed document replayed
/// by someone with publish access cannot roll a gateway back).
public enum ConfigSigning {
    /// A new key pair as base64 text: the private key (32-byte seed) and the public key (32 bytes).
    public static func generateKeyPair() -> (privateKey: String, publicKey: String) {
        let key = Curve25519.Signing.PrivateKey()
        return (key.rawRepresentation.base64EncodedString(), key.publicKey.rawRepresentation.base64EncodedString())
    }

    /// Wraps `document` with its signature by `privateKey` (base64 text, as `config keygen` writes it).
    public static func sign(_ document: [UInt8], privateKey: String) throws -> [UInt8] {
        guard let raw = Data(base64Encoded: privateKey.trimmingCharacters(in: .whitespacesAndNewlines)),
              let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw ConfigurationError(path: "", "not an Ed25519 private key (base64 of 32 bytes, from `config keygen`)")
        }
        let signature = try key.signature(for: Data(document))
        var o = JSONObjectWriter()
        o.string("document", Data(document).base64EncodedString())
        o.string("signature", signature.base64EncodedString())
        return o.finished
    }

    /// Checks signatures with one public key.
    public struct Verifier: Sendable {
        /// The key's 32 bytes (swift-crypto's key type is not `Sendable`; rebuilding it per check is cheap).
        let raw: [UInt8]

        /// `publicKey`: base64 text of the 32-byte key, as `config keygen` writes it.
        public init(publicKey: String) throws {
            guard let raw = Data(base64Encoded: publicKey.trimmingCharacters(in: .whitespacesAndNewlines)),
                  (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil else {
                throw ConfigurationError(path: "remote_config.public_key_file",
                                         "not an Ed25519 public key (base64 of 32 bytes, from `config keygen`)")
            }
            self.raw = [UInt8](raw)
        }

        func isValid(_ signature: [UInt8], for document: [UInt8]) -> Bool {
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return key.isValidSignature(Data(signature), for: Data(document))
        }
    }

    /// The document inside a signed payload (signature not checked: for display), or nil when it is not signed.
    public static func signedDocument(_ payload: [UInt8]) -> [UInt8]? {
        guard let root = try? RemoteJSONParser.parse(payload), case .some(let parts?) = unwrap(root) else { return nil }
        return parts.document
    }

    /// The signed form's parts, or nil when `root` is not a signed document (exactly the two keys, both strings).
    static func unwrap(_ root: RemoteJSON) -> (document: [UInt8], signature: [UInt8])?? {
        guard case .object(let pairs) = root, pairs.count == 2,
              Set(pairs.map(\.0)) == ["document", "signature"] else { return .none }
        guard case .string(let d)? = pairs.first(where: { $0.0 == "document" })?.1,
              case .string(let s)? = pairs.first(where: { $0.0 == "signature" })?.1,
              let doc = Data(base64Encoded: d), let sig = Data(base64Encoded: s) else { return .some(nil) }
        return .some(([UInt8](doc), [UInt8](sig)))
    }
}
