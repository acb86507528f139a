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
        let document =
            #"{"version": 7, "scan": {"active": false, "filters": ["uuid:FEAA"]}, "#
            + #""log": {"level": "info"}, "#
            + #""regions": [{"id": "carts", "name_prefix": "Cart"}], "ranging": {"path_loss_exponent": 2.4}, "#
            + #""connections": {"max": 2}}"#
        #expect(RemoteConfigDocument.read(Array(document.utf8)).errors == [])
        let keys = ConfigSigning.generateKeyPair()
        let signed = String(
            decoding: try ConfigSigning.sign(
                Array(document.utf8), privateKey: keys.privateKey,
                for: .gateway("gw")), as: UTF8.self)
        let tombstone = String(
            decoding: try ConfigSigning.tombstone(
                version: 8, privateKey: keys.privateKey,
                for: .fleet), as: UTF8.self)
        let report = try Self.problems([
            ("bg/gw/config", document), ("bg/gw/config", signed), ("bg/fleet/config", tombstone),
            ("bg/fleet/config", #"{"version": 9, "delete": true}"#),
            (
                "bg/gw/peripherals/001bdc100001/write",
                #"{"characteristic": "2A06", "service": "1802", "value": "02", "#
                    + #""response": true, "id": "op-17"}"#
            ),
        ])
        #expect(report == nil, "\(report ?? "")")
    }

    @Test func shapesTheGatewayRefusesDoNotValidate() throws {
        let refused: [(topic: String, payload: String)] = [
            ("bg/gw/config", #"{"version": 1, "mqtt": {"broker": "mqtt://elsewhere"}}"#),  // local only
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

    /// Enrolment commands (schema/v1/enrol.json): what `EnrolmentCommand` takes validates, what it refuses does not.
    @Test func enrolmentCommandsTheGatewayTakesValidateAndThoseItRefusesDoNot() throws {
        let taken: [(String, EnrolmentCommand)] = [
            (
                #"{"id": "e1", "name": "alice-iphone", "advertise": "Hall gateway", "timeout_s": 90, "accept": false}"#,
                .start(.init(id: "e1", name: "alice-iphone", advertise: "Hall gateway", timeoutSeconds: 90))
            ),
            (#"{"name": "watch"}"#, .start(.init(id: nil, name: "watch"))),
            (#"{"id": "e1", "confirm": true}"#, .confirm(id: "e1", true)),
            (#"{"id": "e1", "confirm": false}"#, .confirm(id: "e1", false)),
            (#"{"id": "e1", "cancel": true}"#, .cancel(id: "e1")),
        ]
        for (payload, command) in taken {
            #expect(EnrolmentCommand.parse(Array(payload.utf8)) == .success(command), "\(payload)")
        }
        let report = try Self.problems(taken.map { ("bg/gw/enrol", $0.0) })
        #expect(report == nil, "\(report ?? "")")

        let refused: [(payload: String, because: String)] = [
            (#"{"id": "e1"}"#, "\"name\" is required"),
            (#"{"id": "e1", "name": ""}"#, "\"name\" must be one line"),
            (#"{"id": "e1", "name": "a\nb"}"#, "\"name\" must be one line"),
            (#"{"id": "e1", "name": "alice", "timeout_s": 0}"#, "\"timeout_s\" must be between 1 and 600"),
            (#"{"id": "e1", "name": "alice", "confirm": true}"#, "\"confirm\" goes alone"),
            (#"{"id": "e1", "cancel": true, "timeout_s": 5}"#, "\"cancel\" goes alone"),
            (#"{"id": "e1", "cancel": false}"#, "unexpected key or type: cancel"),
            (#"{"id": "e1", "name": "alice", "irk": "00"}"#, "unexpected key or type: irk"),
            (#"{"id": 7, "name": "alice"}"#, "\"id\" must be a string"),
            (#"["alice"]"#, "not a JSON object"),
        ]
        for r in refused {
            guard case .failure(let refusal) = EnrolmentCommand.parse(Array(r.payload.utf8)) else {
                Issue.record("taken: \(r.payload)")
                continue
            }
            #expect(refusal.message.contains(r.because), "\(r.payload): \(refusal.message)")
            let report = try Self.problems([("bg/gw/enrol", r.payload)])
            #expect(report?.contains("0 passed, 1 failed") == true, "\(r.payload): \(report ?? "validated")")
        }
    }
}
