import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

@Suite struct RemoteConfigSigningTests {
    static func hex(_ s: String) -> Data {
        Data(
            stride(from: 0, to: s.count, by: 2).map {
                UInt8(s[s.index(s.startIndex, offsetBy: $0)..<s.index(s.startIndex, offsetBy: $0 + 2)], radix: 16)!
            })
    }

    // RFC 8032 §7.1, TEST 1 and TEST 2.
    static let secret1 = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").base64EncodedString()
    static let public1 = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a").base64EncodedString()
    static let public2 = hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c").base64EncodedString()

    /// `text` signed for the default gateway's own layer.
    static func sign(_ text: String, _ key: String) throws -> [UInt8] {
        try ConfigSigning.sign(Array(text.utf8), privateKey: key, for: .gateway(GatewayConfiguration().gateway.id))
    }

    @Test func theVerifierAcceptsTheRFC8032VectorsAndNothingElse() throws {
        let v1 = try ConfigSigning.Verifier(publicKey: Self.public1)
        let sig1 = [UInt8](
            Self.hex(
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            ))
        #expect(v1.isValid(sig1, for: []))
        #expect(!v1.isValid(sig1, for: [0x72]))
        let v2 = try ConfigSigning.Verifier(publicKey: Self.public2)
        let sig2 = [UInt8](
            Self.hex(
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            ))
        #expect(v2.isValid(sig2, for: [0x72]))
        #expect(!v1.isValid(sig2, for: [0x72]))
    }

    @Test func aSignedDocumentAppliesOnlyWithTheMatchingKey() throws {
        let doc = Array(#"{"version": 3, "log": {"level": "debug"}}"#.utf8)
        let signed = try ConfigSigning.sign(doc, privateKey: Self.secret1, for: .gateway("gateway"))
        let good = RemoteConfigDocument.read(signed, verifier: try ConfigSigning.Verifier(publicKey: Self.public1))
        #expect(good.errors == [] && good.overlay?.logLevel == "debug")
        let wrong = RemoteConfigDocument.read(signed, verifier: try ConfigSigning.Verifier(publicKey: Self.public2))
        #expect(wrong.overlay == nil && wrong.errors.first?.path == "$.signature")
        // Without a key the signed form is read, and says nothing was checked.
        let unchecked = RemoteConfigDocument.read(signed)
        #expect(unchecked.overlay?.logLevel == "debug")
        #expect(unchecked.warnings.map(\.path) == ["$.signature"])
    }

    @Test func aTamperedUnsignedOrVersionlessDocumentIsRefusedWhenAKeyIsSet() throws {
        let verifier = try ConfigSigning.Verifier(publicKey: Self.public1)
        let signed = try Self.sign(#"{"version": 3, "log": {"level": "debug"}}"#, Self.secret1)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(signed)) as? [String: String])
        json["document"] = Data(#"{"version": 3, "log": {"level": "trace"}}"#.utf8).base64EncodedString()
        let tampered = [UInt8](try JSONSerialization.data(withJSONObject: json))
        #expect(RemoteConfigDocument.read(tampered, verifier: verifier).errors.first?.path == "$.signature")
        let unsigned = RemoteConfigDocument.read(Array(#"{"version": 4}"#.utf8), verifier: verifier)
        #expect(unsigned.errors.first?.reason.contains("unsigned") == true)
        let versionless = try Self.sign(#"{"log": {"level": "debug"}}"#, Self.secret1)
        #expect(RemoteConfigDocument.read(versionless, verifier: verifier).errors.first?.path == "$.version")
    }

    @Test func aLowerSignedVersionThanTheOneInForceIsRefused() throws {
        let verifier = try ConfigSigning.Verifier(publicKey: Self.public1)
        let rc = RemoteConfigController(local: GatewayConfiguration(), directory: nil, verifier: verifier)
        func signed(_ v: Int, _ level: String) throws -> [UInt8] {
            try Self.sign(#"{"version": \#(v), "log": {"level": "\#(level)"}}"#, Self.secret1)
        }
        #expect(rc.receive(.gateway, payload: try signed(5, "debug"))?.status == .applied)
        let old = rc.receive(.gateway, payload: try signed(4, "trace"))
        #expect(old?.status == .rejected && old?.errors.first?.path == "$.version")
        #expect(rc.effective.log.level == "debug")
        #expect(rc.receive(.gateway, payload: try signed(6, "error"))?.status == .applied)
    }

    @Test func keygenMakesAPairThatSignsAndVerifies() throws {
        let (privateKey, publicKey) = ConfigSigning.generateKeyPair()
        let signed = try Self.sign(#"{"version": 1}"#, privateKey)
        let verifier = try ConfigSigning.Verifier(publicKey: publicKey)
        #expect(RemoteConfigDocument.read(signed, verifier: verifier).errors == [])
    }
}
