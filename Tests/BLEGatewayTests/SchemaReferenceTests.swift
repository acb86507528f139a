import Foundation
import Testing

/// The schemas' references resolve under the jsonschema the tests pin (4.26, `make test-venv`) and under Debian 12's
/// (4.10): a fragment-only `$ref` inside a schema reached through another's `$ref` was "Unresolvable JSON pointer:
/// '$defs/ladder'" under 4.26.
@Suite struct SchemaReferenceTests {
    static let interpreters = [SchemaValidation.venvPython, "/usr/bin/python3"].filter {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static func health(adapter: String) -> String {
        """
        {"run":"0123abcd","seq":7,"ts":1700000000.5,"clock_synced":true,"uptime_s":12.5,
         "spool":{"depth":0,"bytes":4096,"dropped_samples":0,"downsampled_samples":0},
         "publish":{"acknowledged":3,"rate_per_s":0.5,"connected":true,"reconnects":0},
         "scan":{"reports":10,"malformed_events":0,"tracked_beacons":1},"memory":{"rss_bytes":1000000},
         "adapter":\(adapter)}
        """
    }

    @Test(arguments: interpreters)
    func aHealthPayloadWithTheLadderValidatesAndAWrongOneIsReported(python: String) throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ladder =
            #"{"climbs":1,"exhausted":0,"silences":1,"recoveries":{},"attempts":{},"#
            + #""total_time_to_recover_s":2.5}"#
        let good = try SchemaValidation.problems(
            [(topic: "bg/gw/health", payload: Self.health(adapter: ladder))],
            prefix: "bg", directory: dir, python: python)
        #expect(good == nil, "\(python): \(good ?? "")")
        let bad = try SchemaValidation.problems(
            [(topic: "bg/gw/health", payload: Self.health(adapter: "{}"))],
            prefix: "bg", directory: dir, python: python)
        #expect(bad?.contains("'climbs' is a required property") == true, "\(python): \(bad ?? "nil")")
    }
}
