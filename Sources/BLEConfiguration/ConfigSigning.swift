import BLETransport
import Crypto
import Foundation

/// Signed remote documents (Ed25519, RFC 8032). The signed form carries the document's exact bytes, so nothing has
/// to be canonicalised before checking, and names where the document is meant to apply:
///
///     {"target": "<gateway id, or fleet>", "layer": "gateway" | "fleet",
///      "document": "<base64 of the JSON document>", "signature": "<base64 of Ed25519(signed message)>"}
///
/// The signature covers the target and the layer as well as the document (`signedMessage`), so a document signed for
/// one gateway cannot be replayed on another's topic, nor a gateway's document on the fleet's.
///
/// Off by default. With `remote_config.public_key_file` set, only documents signed by that key for this gateway
/// apply, they must carry a `version`, and each layer keeps a version floor that only rises (RemoteConfigFloors): a
/// lower version is refused, an equal one only re-applies the identical document, and a layer is deleted only by a
/// signed tombstone `{"version": N, "delete": true}`, never by an empty retained message.
public enum ConfigSigning {
    /// A new key pair as base64 text: the private key (32-byte seed) and the public key (32 bytes).
    public static func generateKeyPair() -> (privateKey: String, publicKey: String) {
        let key = Curve25519.Signing.PrivateKey()
        return (key.rawRepresentation.base64EncodedString(), key.publicKey.rawRepresentation.base64EncodedString())
    }

    /// Where a signed document is meant to apply: the fleet layer of every gateway, or one gateway's own layer.
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        /// `fleet`, or the gateway id (a topic level: `fleet` is reserved, so the two never collide).
        public var target: String
        public var layer: RemoteConfigLayer

        public static let fleet = Address(target: "fleet", layer: .fleet)
        public static func gateway(_ id: String) -> Address { Address(target: id, layer: .gateway) }

        /// The address of `layer` on the gateway `gatewayID`.
        public init(layer: RemoteConfigLayer, gatewayID: String) {
            self = layer == .fleet ? .fleet : .gateway(gatewayID)
        }

        init(target: String, layer: RemoteConfigLayer) {
            self.target = target
            self.layer = layer
        }

        public var description: String { layer == .fleet ? "the fleet" : "gateway \(target)" }
    }

    /// What the signature covers: a context string, the target, the layer, then the document's bytes. Target and
    /// layer are topic levels (no newline), so the message splits one way only.
    static func signedMessage(_ address: Address, _ document: [UInt8]) -> [UInt8] {
        Array("blegateway-config-v1\n\(address.target)\n\(address.layer.rawValue)\n".utf8) + document
    }

    /// Wraps `document` with its signature by `privateKey` (base64 text, as `config keygen` writes it) for `address`.
    public static func sign(_ document: [UInt8], privateKey: String, for address: Address) throws -> [UInt8] {
        guard let raw = Data(base64Encoded: privateKey.trimmingCharacters(in: .whitespacesAndNewlines)),
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else {
            throw ConfigurationError(path: "", "not an Ed25519 private key (base64 of 32 bytes, from `config keygen`)")
        }
        let signature = try key.signature(for: Data(signedMessage(address, document)))
        var o = JSONObjectWriter()
        o.string("target", address.target)
        o.string("layer", address.layer.rawValue)
        o.string("document", Data(document).base64EncodedString())
        o.string("signature", signature.base64EncodedString())
        return o.finished
    }

    /// What a gateway keeps of the document at a layer's floor (and reports on config/state): SHA-256 of its bytes.
    public static func digest(_ document: [UInt8]) -> String { RemoteConfigFloors.digest(document) }

    /// A signed tombstone: deletes `address`'s layer on gateways with a public key, and raises its floor to `version`.
    public static func tombstone(version: Int, privateKey: String, for address: Address) throws -> [UInt8] {
        try sign(Array(#"{"version":\#(version),"delete":true}"#.utf8), privateKey: privateKey, for: address)
    }

    /// Checks signatures with one public key.
    public struct Verifier: Sendable {
        /// The key's 32 bytes (swift-crypto's key type is not `Sendable`; rebuilding it per check is cheap).
        let raw: [UInt8]

        /// `publicKey`: base64 text of the 32-byte key, as `config keygen` writes it.
        public init(publicKey: String) throws {
            guard let raw = Data(base64Encoded: publicKey.trimmingCharacters(in: .whitespacesAndNewlines)),
                (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil
            else {
                throw ConfigurationError(
                    path: "remote_config.public_key_file",
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

    /// A signed payload's parts. `target` and `layer` are nil in the older form that signed the document alone.
    struct Parts {
        var target: String?
        var layer: String?
        var document: [UInt8]
        var signature: [UInt8]

        var address: Address? {
            guard let target, let layer else { return nil }
            return Address(target: target, layer: RemoteConfigLayer(rawValue: layer))
        }
    }

    /// The signed form's parts, or nil when `root` is not a signed document (an object with exactly `document` and
    /// `signature`, and optionally `target` and `layer`, all strings); `.some(nil)` when it is one, malformed.
    static func unwrap(_ root: RemoteJSON) -> Parts?? {
        guard case .object(let pairs) = root else { return .none }
        let keys = Set(pairs.map(\.0))
        guard keys.isSuperset(of: ["document", "signature"]),
            keys.isSubset(of: ["document", "signature", "target", "layer"])
        else { return .none }
        func text(_ k: String) -> String?? {
            guard let v = pairs.first(where: { $0.0 == k })?.1 else { return .some(nil) }
            guard case .string(let s) = v else { return .none }
            return .some(s)
        }
        guard case .some(let d?) = text("document"), case .some(let s?) = text("signature"),
            case .some(let target) = text("target"), case .some(let layer) = text("layer"),
            let doc = Data(base64Encoded: d), let sig = Data(base64Encoded: s)
        else { return .some(nil) }
        return .some(Parts(target: target, layer: layer, document: [UInt8](doc), signature: [UInt8](sig)))
    }
}

extension ConfigSigning.Verifier {
    /// The verifier for `remote_config.public_key_file`, or nil when signatures are off.
    public static func configured(by c: GatewayConfiguration) throws -> ConfigSigning.Verifier? {
        guard let path = c.remoteConfig.publicKeyFile else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(path: "remote_config.public_key_file", "cannot read \(path)")
        }
        return try ConfigSigning.Verifier(publicKey: String(decoding: data, as: UTF8.self))
    }
}
