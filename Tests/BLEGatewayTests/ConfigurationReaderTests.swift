import Foundation
import Testing
@testable import BLEGateway

@Suite struct ConfigurationReaderTests {
    @Test func anEmptyFileMeansEveryDefault() throws {
        var r = YAMLConfigurationReader()
        #expect(try r.read("") == GatewayConfiguration())
    }

    @Test func readsTheShippedExampleWithoutWarnings() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/gateway.yaml")
        var r = YAMLConfigurationReader()
        let c = try r.read(String(contentsOf: url, encoding: .utf8))
        #expect(r.warnings.isEmpty, "\(r.warnings)")
        #expect(c.mqtt.protocolVersion == 5)
    }

    @Test func aWrongTypeNamesItsLineColumnAndPath() {
        var r = YAMLConfigurationReader()
        #expect {
            try r.read("mqtt:\n  broker: mqtt://h:1\n  qos: high\n")
        } throws: { e in
            let c = e as? ConfigurationError
            return c?.line == 3 && c?.column == 8 && c?.path == "mqtt.qos"
        }
    }

    @Test func anOutOfRangeValueIsRefused() {
        var r = YAMLConfigurationReader()
        #expect(throws: ConfigurationError.self) { try r.read("mqtt:\n  qos: 3\n") }
    }

    @Test func aDuplicateKeyIsRefused() {
        var r = YAMLConfigurationReader()
        #expect {
            try r.read("scan:\n  active: true\n  active: false\n")
        } throws: { e in (e as? ConfigurationError)?.message.contains("duplicate key") == true }
    }

    @Test func aTabInTheIndentationIsASyntaxErrorWithItsLine() {
        var r = YAMLConfigurationReader()
        #expect {
            try r.read("scan:\n\tactive: true\n")
        } throws: { e in (e as? ConfigurationError)?.line == 2 }
    }

    @Test func anUnknownKeyIsAWarningNotAnError() throws {
        var r = YAMLConfigurationReader()
        _ = try r.read("scan:\n  actve: true\n")
        #expect(r.warnings.map(\.path) == ["scan.actve"])
    }

    @Test func aScanWindowLongerThanTheIntervalIsRefused() {
        var r = YAMLConfigurationReader()
        #expect(throws: ConfigurationError.self) { try r.read("scan:\n  interval_ms: 50\n  window_ms: 100\n") }
    }
}
