import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

@Suite struct ConfigurationReaderTests {
    @Test func anEmptyFileMeansEveryDefault() throws {
        var r = YAMLConfigurationReader()
        #expect(try r.read("") == GatewayConfiguration())
    }

    @Test func readsTheShippedExampleWithoutWarnings() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../config/gateway.yaml")
        var r = YAMLConfigurationReader()
        let c = try r.read(String(contentsOf: url, encoding: .utf8))
        #expect(r.warnings.isEmpty, "\(r.warnings)")
        #expect(c.mqtt.protocolVersion == 5)
    }

    @Test func theESPHomeKeyIsThirtyTwoBytesOfBase64AndWithoutOneTheCheckWarns() throws {
        var r = YAMLConfigurationReader()
        let c = try r.read(
            "esphome_api:\n  enabled: true\n  port: 6054\n  key: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")
        #expect(c.esphomeAPI.key == Array(0..<32))
        #expect(c.esphomeAPI.port == 6054 && c.esphomeAPI.enabled)
        #expect(r.warnings.isEmpty)
        var short = YAMLConfigurationReader()
        #expect {
            try short.read("esphome_api:\n  enabled: true\n  key: AAECAwQF\n")
        } throws: { e in
            let c = e as? ConfigurationError
            return c?.path == "esphome_api.key" && c?.line == 3 && "\(c!)".contains("32 bytes in base64")
        }
        var plaintext = YAMLConfigurationReader()
        _ = try plaintext.read("esphome_api:\n  enabled: true\n")
        #expect(plaintext.warnings.map(\.path) == ["esphome_api"])
        #expect(plaintext.warnings.first.map { "\($0)".contains("plaintext") } == true)
        var off = YAMLConfigurationReader()
        _ = try off.read("esphome_api:\n  enabled: false\n")
        #expect(off.warnings.isEmpty, "no warning for an API that is off")
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

    @Test func theValueCommitWindowIsReadAndBounded() throws {
        var r = YAMLConfigurationReader()
        #expect(try r.read("spool:\n  value_commit_window_ms: 2\n").spool.valueCommitWindowMS == 2)
        #expect(GatewayConfiguration().spool.valueCommitWindowMS == 5)
        #expect(throws: ConfigurationError.self) { try r.read("spool:\n  value_commit_window_ms: 0\n") }
    }

    @Test func aScanWindowLongerThanTheIntervalIsRefused() {
        var r = YAMLConfigurationReader()
        #expect(throws: ConfigurationError.self) { try r.read("scan:\n  interval_ms: 50\n  window_ms: 100\n") }
    }
}

@Suite struct ConfigurationLoaderTests {
    func write(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "gw-\(UUID().uuidString).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aMissingFileIsAClearError() {
        #expect {
            try ConfigurationLoader.load(path: "/nonexistent/gateway.yaml")
        } throws: { "\($0)".contains("no such file") }
    }

    @Test func anUnreadableFileSaysPermissionDenied() throws {
        guard getuid() != 0 else { return }  // root reads everything; the message is covered when not root
        let p = try write("gateway:\n  id: a\n")
        chmod(p, 0)
        #expect { try ConfigurationLoader.load(path: p) } throws: { "\($0)".contains("permission denied") }
    }

    @Test func errorsNameTheFileLineAndColumn() throws {
        let p = try write("mqtt:\n  qos: high\n")
        #expect { try ConfigurationLoader.load(path: p) } throws: {
            "\($0)" == "\(p): line 2, column 8: mqtt.qos: expected a whole number, found \"high\""
        }
    }

    /// A '.' in the gateway id cannot be a discovery node id, so the shipped ACL's pattern would refuse every document:
    /// said at config check, not found later in the broker's log.
    @Test func aGatewayIdWithADotWarnsWhenHomeAssistantsDiscoveryIsOn() throws {
        let on = try ConfigurationLoader.load(
            path: try write("gateway:\n  id: gw.a\nhomeassistant:\n  enabled: true\n"))
        #expect(on.warnings.map(\.path) == ["gateway.id"])
        #expect(on.warnings.first.map { "\($0)".contains("homeassistant/device/%u/#") } == true)
        let off = try ConfigurationLoader.load(path: try write("gateway:\n  id: gw.a\n"))
        #expect(off.warnings.isEmpty)
    }

    /// Several brokers under 3.1.1 is how a NATS cluster is joined, and NATS refuses topics with a '.'.
    @Test func aDotInTheTopicsWarnsWhenSeveralBrokersAreListedUnderMQTT311() throws {
        let cluster = "mqtt:\n  protocol: 3\n  brokers: [mqtt://a, mqtt://b]\n"
        let id = try ConfigurationLoader.load(path: try write("gateway:\n  id: gw.a\n" + cluster))
        #expect(id.warnings.map(\.path) == ["gateway.id"])
        let prefix = try ConfigurationLoader.load(path: try write(cluster + "  prefix: site.a\n"))
        #expect(prefix.warnings.map(\.path) == ["mqtt.prefix"])
        #expect("\(prefix.warnings.first.map { "\($0)" } ?? "")".contains("NATS"))
        let one = try ConfigurationLoader.load(path: try write("gateway:\n  id: gw.a\nmqtt:\n  protocol: 3\n"))
        #expect(one.warnings.isEmpty, "one broker: no cluster, no warning")
        let v5 = try ConfigurationLoader.load(
            path: try write("gateway:\n  id: gw.a\nmqtt:\n  brokers: [mqtt://a, mqtt://b]\n"))
        #expect(v5.warnings.isEmpty, "MQTT 5: not NATS 2.9")
    }

    @Test(arguments: ["gw/1", "fleet", "a b"])
    func aGatewayIDThatCannotBeATopicLevelIsRefused(_ id: String) throws {
        let p = try write("gateway:\n  id: \"\(id)\"\n")
        #expect(throws: FileConfigurationError.self) { try ConfigurationLoader.load(path: p) }
    }

    @Test func brokerAddressesParseWithDefaultPorts() throws {
        #expect(try BrokerAddress(parsing: "mqtt://h") == BrokerAddress(host: "h", port: 1883, tls: false))
        #expect(try BrokerAddress(parsing: "mqtts://h:9999") == BrokerAddress(host: "h", port: 9999, tls: true))
        #expect(try BrokerAddress(parsing: "mqtt://[::1]:1884") == BrokerAddress(host: "::1", port: 1884, tls: false))
        #expect(throws: ConfigurationError.self) { try BrokerAddress(parsing: "http://h") }
        #expect(throws: ConfigurationError.self) { try BrokerAddress(parsing: "mqtt://h:99999") }
    }

    @Test func aClusterIsReadAsBrokersWithItsFailoverOrder() throws {
        let p = try write(
            "mqtt:\n  brokers: [mqtt://a:1883, \"mqtt://[::1]:1884\", mqtt://c]\n  failover: random\n")
        let c = try ConfigurationLoader.load(path: p).configuration
        #expect(c.mqtt.brokers == ["mqtt://a:1883", "mqtt://[::1]:1884", "mqtt://c"])
        #expect(c.mqtt.failover == .random)
        #expect(c.mqtt.broker == "mqtt://a:1883", "broker is the list's first")
        let one = try ConfigurationLoader.load(path: try write("mqtt:\n  broker: mqtt://b:1\n")).configuration
        #expect(one.mqtt.brokers == ["mqtt://b:1"] && one.mqtt.failover == .inOrder)
    }

    /// Each refusal names the entry (its index) and what is wrong with it.
    @Test(arguments: [
        ("mqtt:\n  broker: mqtt://a\n  brokers: [mqtt://b]\n", "mqtt.brokers", "not both"),
        ("mqtt:\n  brokers: []\n", "mqtt.brokers", "at least one broker"),
        ("mqtt:\n  brokers: [mqtt://a:1883, mqtt://b:1883, mqtt://A:1883]\n", "mqtt.brokers[2]", "mqtt.brokers[0]"),
        ("mqtt:\n  brokers: [mqtt://a, mqtt://a:1883]\n", "mqtt.brokers[1]", "the same broker"),
        ("mqtt:\n  brokers: [mqtt://a, http://b]\n", "mqtt.brokers[1]", "expected mqtt://"),
        ("mqtt:\n  brokers: [mqtt://a, mqtt://b:0]\n", "mqtt.brokers[1]", "bad port"),
        ("mqtt:\n  brokers: [mqtts://a, mqtt://b]\n", "mqtt.brokers[1]", "the scheme of the first (mqtts://)"),
        ("mqtt:\n  brokers: mqtt://a\n", "mqtt.brokers", "expected a list"),
        ("mqtt:\n  brokers: [mqtt://a]\n  failover: roundrobin\n", "mqtt.failover", "in_order, random"),
    ])
    func aBrokerListThatCannotBeUsedIsRefusedNamingTheEntry(_ yaml: String, _ path: String, _ why: String) throws {
        let p = try write(yaml)
        do {
            _ = try ConfigurationLoader.load(path: p)
            Issue.record("accepted: \(yaml)")
        } catch let e as FileConfigurationError {
            #expect(e.error.path == path, "\(e)")
            #expect("\(e)".contains(why), "\(e)")
        }
    }
}

extension BrokerAddress {
    init(host: String, port: Int, tls: Bool) {
        self = try! BrokerAddress(
            parsing: "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)")
    }
}
