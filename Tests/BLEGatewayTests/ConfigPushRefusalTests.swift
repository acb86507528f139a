import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `config push` refuses what the gateway would refuse, from what the gateway reports on its retained `config/state`
/// (it used to send unsigned and lower-version documents to a gateway that requires signatures): the real command
/// against a real mosquitto on loopback.
@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable)), .serialized)
struct ConfigPushRefusalTests {
    @Test func pushRefusesUnsignedLowerOrWronglySignedDocumentsAndSendsASignedTombstone() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let broker = try Mosquitto(directory: dir)
        try broker.start()
        defer { broker.kill() }
        func file(_ name: String, _ text: String) throws -> String {
            let url = dir.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let (ops, opsPublic) = ConfigSigning.generateKeyPair()
        let (_, otherPublic) = ConfigSigning.generateKeyPair()
        let key = try file("ops.key", ops)
        let pub = try file("ops.pub", opsPublic)
        let other = try file("other.pub", otherPublic)
        // What a gateway with a public key reports after applying version 5.
        let v5 = #"{"version": 5, "log": {"level": "debug"}}"#
        let state =
            #"{"run":"0123abcd","seq":3,"ts":1,"clock_synced":true,"status":"applied","hash":"sha256:x","#
            + #""signed_only":true,"floors":{"gateway":{"version":5,"#
            + #""sha256":"\#(ConfigSigning.digest(Array(v5.utf8)))"}},"#
            + #""errors":[],"warnings":[]}"#
        let published = try ToolRun.run(
            "/usr/bin/mosquitto_pub",
            [
                "-h", "127.0.0.1", "-p", "\(broker.port)", "-r", "-q", "1", "-t", "site/gw-1/config/state", "-m", state,
            ])
        #expect(published.status == 0, "\(published.output)")

        let common = ["config", "push", "--gateway", "gw-1", "--prefix", "site", "--broker", broker.url, "--wait", "0"]
        let bin = BuiltProducts.blegateway
        let unsigned = try ToolRun.run(bin, common + [try file("v6.json", #"{"version": 6}"#)])
        #expect(unsigned.status == 2 && unsigned.output.contains("applies only signed documents"), "\(unsigned.output)")
        let lower = try ToolRun.run(bin, common + ["--sign", key, try file("v4.json", #"{"version": 4}"#)])
        #expect(lower.status == 2 && lower.output.contains("lower than 5"), "\(lower.output)")
        let otherBytes = try ToolRun.run(bin, common + ["--sign", key, try file("v5b.json", #"{"version": 5}"#)])
        #expect(otherBytes.status == 2 && otherBytes.output.contains("other content"), "\(otherBytes.output)")
        let v7 = try file("v7.json", #"{"version": 7}"#)
        let wrongKey = try ToolRun.run(bin, common + ["--sign", key, "--public-key", other, v7])
        #expect(wrongKey.status == 2 && wrongKey.output.contains("$.signature"), "\(wrongKey.output)")
        let emptyDelete = try ToolRun.run(bin, common + ["--delete"])
        #expect(emptyDelete.status == 2 && emptyDelete.output.contains("signed tombstone"), "\(emptyDelete.output)")
        // The tombstone's version is one above the floor the gateway reports.
        let tombstone = try ToolRun.run(bin, common + ["--delete", "--sign", key, "--public-key", pub])
        #expect(
            tombstone.status == 0 && tombstone.output.contains("signed tombstone, version 6"),
            "\(tombstone.output)")
        let retained = try ToolRun.run(
            "/usr/bin/mosquitto_sub",
            [
                "-h", "127.0.0.1", "-p", "\(broker.port)", "-C", "1",
                "-W", "3", "-t", "site/gw-1/config",
            ])
        let signed = try #require(ConfigSigning.signedDocument(Array(retained.output.utf8.dropLast())))
        #expect(String(decoding: signed, as: UTF8.self) == #"{"version":6,"delete":true}"#)
        let v8 = try file("v8.json", #"{"version": 8}"#)
        let good = try ToolRun.run(bin, common + ["--sign", key, "--public-key", pub, v8])
        #expect(good.status == 0 && good.output.contains("published"), "\(good.output)")
    }
}
