import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// With a public key, signed remote configuration cannot be rolled back (issue: "Nothing lost, nothing rolled
/// back"): the two attacks that worked — an empty retained message clearing the layer and its floor so an old
/// signed document applied again, and a document signed for another gateway or layer applying here — are refused,
/// and the version floor survives a damaged store and a restart.
@Suite struct RemoteConfigRollbackTests {
    static let keys = ConfigSigning.generateKeyPair()
    static let gatewayID = "gw-7"

    struct Store {
        let directory: String
        init() throws {
            directory = NSTemporaryDirectory() + "rollback-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        func remove() { try? FileManager.default.removeItem(atPath: directory) }

        /// A gateway (as after a start) over this store.
        func controller() throws -> RemoteConfigController {
            var local = GatewayConfiguration()
            local.gateway.id = RemoteConfigRollbackTests.gatewayID
            let verifier = try ConfigSigning.Verifier(publicKey: RemoteConfigRollbackTests.keys.publicKey)
            return RemoteConfigController(local: local, directory: directory, verifier: verifier)
        }
    }

    static func doc(_ version: Int, _ level: String) -> [UInt8] {
        Array(#"{"version": \#(version), "log": {"level": "\#(level)"}}"#.utf8)
    }

    static func signed(_ version: Int, _ level: String, for address: ConfigSigning.Address = .gateway(gatewayID))
        throws -> [UInt8]
    {
        try ConfigSigning.sign(doc(version, level), privateKey: keys.privateKey, for: address)
    }

    @Test func anEmptyMessageNeitherClearsASignedLayerNorLetsAnOlderDocumentBackIn() throws {
        let store = try Store()
        defer { store.remove() }
        let rc = try store.controller()
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        let cleared = try #require(rc.receive(.gateway, payload: []))
        #expect(cleared.status == .rejected && cleared.errors.first?.reason.contains("signed tombstone") == true)
        #expect(rc.effective.log.level == "debug" && rc.layersInForce == [.gateway])
        let replay = try #require(rc.receive(.gateway, payload: try Self.signed(3, "trace")))
        #expect(replay.status == .rejected && replay.errors.first?.path == "$.version")
        #expect(rc.effective.log.level == "debug")
        // The same after a restart: the floor is on disk.
        let restarted = try store.controller()
        #expect(restarted.receive(.gateway, payload: [])?.status == .rejected)
        #expect(restarted.receive(.gateway, payload: try Self.signed(3, "trace"))?.status == .rejected)
        #expect(restarted.effective.log.level == "debug")
    }

    @Test func aDocumentSignedForAnotherGatewayOrLayerIsRefused() throws {
        let store = try Store()
        defer { store.remove() }
        let rc = try store.controller()
        let elsewhere = try #require(rc.receive(.gateway, payload: try Self.signed(9, "trace", for: .gateway("gw-8"))))
        #expect(elsewhere.status == .rejected && elsewhere.errors.first?.path == "$.target")
        let fleetOnGateway = try #require(rc.receive(.gateway, payload: try Self.signed(9, "trace", for: .fleet)))
        #expect(fleetOnGateway.status == .rejected && fleetOnGateway.errors.first?.path == "$.target")
        let gatewayOnFleet = try #require(rc.receive(.fleet, payload: try Self.signed(9, "trace")))
        #expect(gatewayOnFleet.status == .rejected && gatewayOnFleet.errors.first?.path == "$.target")
        // Rewriting the target in the envelope breaks the signature: it covers the target and the layer.
        var json = try #require(
            try JSONSerialization.jsonObject(
                with: Data(try Self.signed(9, "trace", for: .gateway("gw-8")))) as? [String: String])
        json["target"] = Self.gatewayID
        let retargeted = [UInt8](try JSONSerialization.data(withJSONObject: json))
        #expect(rc.receive(.gateway, payload: retargeted)?.errors.first?.path == "$.signature")
        // The older form, which signed the document alone, is refused with a way out.
        json = ["document": Data(Self.doc(9, "trace")).base64EncodedString(), "signature": json["signature"]!]
        let legacy = [UInt8](try JSONSerialization.data(withJSONObject: json))
        #expect(rc.receive(.gateway, payload: legacy)?.errors.first?.reason.contains("sign it again") == true)
        #expect(rc.effective.log.level == GatewayConfiguration().log.level)
        #expect(rc.receive(.fleet, payload: try Self.signed(9, "trace", for: .fleet))?.status == .applied)
    }

    @Test func aSignedTombstoneDeletesTheLayerAndRaisesItsFloor() throws {
        let store = try Store()
        defer { store.remove() }
        let rc = try store.controller()
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        let stale = try ConfigSigning.tombstone(
            version: 4, privateKey: Self.keys.privateKey,
            for: .gateway(Self.gatewayID))
        #expect(rc.receive(.gateway, payload: stale)?.status == .rejected)
        let tombstone = try ConfigSigning.tombstone(
            version: 6, privateKey: Self.keys.privateKey,
            for: .gateway(Self.gatewayID))
        let deleted = try #require(rc.receive(.gateway, payload: tombstone))
        #expect(deleted.status == .cleared && deleted.version == 6 && rc.layersInForce.isEmpty)
        #expect(rc.effective.log.level == GatewayConfiguration().log.level)
        #expect(!FileManager.default.fileExists(atPath: store.directory + "/remote-config.gateway.json"))
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .rejected)
        #expect(rc.receive(.gateway, payload: try Self.signed(6, "debug"))?.status == .rejected)
        #expect(try store.controller().receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .rejected)
        #expect(rc.receive(.gateway, payload: try Self.signed(7, "error"))?.status == .applied)
        // A tombstone that tries to set something as well is not a tombstone.
        let mixed = try ConfigSigning.sign(
            Array(#"{"version": 8, "delete": true, "log": {"level": "trace"}}"#.utf8),
            privateKey: Self.keys.privateKey, for: .gateway(Self.gatewayID))
        #expect(rc.receive(.gateway, payload: mixed)?.errors.first?.path == "$.delete")
    }

    @Test func anEqualVersionReappliesOnlyTheIdenticalDocument() throws {
        let store = try Store()
        defer { store.remove() }
        let rc = try store.controller()
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        let other = try #require(rc.receive(.gateway, payload: try Self.signed(5, "trace")))
        #expect(other.status == .rejected && other.errors.first?.reason.contains("other content") == true)
        // The broker sends the retained document again after a restart: the same bytes apply.
        let restarted = try store.controller()
        #expect(restarted.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        #expect(restarted.receive(.gateway, payload: try Self.signed(5, "trace"))?.status == .rejected)
    }

    @Test func theFloorSurvivesADamagedStore() throws {
        let store = try Store()
        defer { store.remove() }
        do {
            let rc = try store.controller()
            #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        }
        // A power cut or a bad card: the stored layer is cut short, and one copy of the floors is garbage.
        let layerFile = store.directory + "/remote-config.gateway.json"
        let bytes = try #require(FileManager.default.contents(atPath: layerFile))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: layerFile))
        try Data("{\"gatew".utf8).write(to: URL(fileURLWithPath: store.directory + "/remote-config.floor.json"))
        let rc = try store.controller()
        #expect(rc.layersInForce.isEmpty && rc.effective.log.level == GatewayConfiguration().log.level)
        #expect(rc.startupProblems.count == 2, "\(rc.startupProblems)")
        #expect(FileManager.default.fileExists(atPath: layerFile + ".damaged"))
        #expect(rc.floors[.gateway]?.version == 5)
        #expect(rc.receive(.gateway, payload: try Self.signed(4, "trace"))?.status == .rejected)
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "trace"))?.status == .rejected)
        #expect(rc.receive(.gateway, payload: try Self.signed(5, "debug"))?.status == .applied)
        // Both copies were rewritten whole: the next start reads the floor from either.
        let again = try store.controller()
        #expect(again.startupProblems.isEmpty && again.floors[.gateway]?.version == 5)
    }
}
