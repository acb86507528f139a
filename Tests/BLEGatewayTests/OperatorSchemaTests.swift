import Foundation
import Testing
@testable import BLEConfiguration
@testable import BLEGateway

/// What operators publish has a schema too (schema/v1/peripheral-write.json, config-document.json), and it agrees
/// with the gateway's own readers: what they accept validates, and what they refuse for its shape does not.
@Suite struct OperatorSchemaTests {
    static func problems(_ messages: [(topic: String, payload: String)]) throws -> String? {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("operator-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        return try SchemaValidation.problems(messages, prefix: "bg", directory: dir, operatorTopics: true)
    }

    @Test func documentsTombstonesSignedFormsAndWriteCommandsTheGatewayAcceptsValidate() throws {
        let document = #"{"version": 7, "scan": {"active": false, "filters": ["uuid:FEAA"]}, "#
            + #""log": {"level": "info"}, "#
            + #""regions": [{"id": "carts", "name_prefix": "Cart"}], "ranging": {"path_loss_exponent": 2.4}, "#
            + #""connections": {"max": 2}}"#
        #expect(RemoteConfigDocument.read(Array(document.utf8)).errors == [])
        let keys = ConfigSigning.generateKeyPair()
        let signed = String(decoding: try ConfigSigning.sign(Array(document.utf8), privateKey: keys.privateKey,
                                                             for: .gateway("gw")), as: UTF8.self)
        let tombstone = String(decoding: try ConfigSigning.tombstone(version: 8, privateKey: keys.privateKey,
                                                                     for: .fleet), as: UTF8.self)
        let report = try Self.problems([
            ("bg/gw/config", document), ("bg/gw/config", signed), ("bg/fleet/config", tombstone),
            ("bg/fleet/config", #"{"version": 9, "delete": true}"#),
            ("bg/gw/peripherals/001bdc100001/write", #"{"characteristic": "2A06", "service": "1802", "value": "02", "#
                + #""response": true, "id": "op-17"}"#),
        ])
        #expect(report == nil, "\(report ?? "")")
    }

    @Test func shapesTheGatewayRefusesDoNotValidate() throws {
        let refused: [(topic: String, payload: String)] = [
            ("bg/gw/config", #"{"version": 1, "mqtt": {"broker": "mqtt://elsewhere"}}"#),     // local only
            ("bg/gw/config", #"{"version": 1, "delete": true, "log": {"level": "debug"}}"#),  // not a tombstone
            ("bg/gw/config", #"{"log": {"level": "loud"}}"#),
            ("bg/gw/peripherals/001bdc100001/write", #"{"characteristic": "2A06", "value": "0"}"#),  // odd hex
            ("bg/gw/peripherals/001bdc100001/write", #"{"characteristic": "2A06", "value": "02", "colour": 1}"#),
        ]
        for message in refused {
            if message.topic.hasSuffix("/config") {
                #expect(RemoteConfigDocument.read(Array(message.payload.utf8)).overlay == nil, "\(message.payload)")
            }
            let report = try Self.problems([message])
            #expect(report?.contains("0 passed, 1 failed") == true, "\(message.payload): \(report ?? "validated")")
        }
    }
}
