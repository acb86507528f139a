import BLEDomain
import BLEHCI
import BLEPublishing
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// Home Assistant discovery documents as literal JSON, and the announcer's lifecycle: what is published, removed
/// and announced again, as configuration changes and Home Assistant comes online.
@Suite struct HomeAssistantDiscoveryTests {
    static let topics = try! Topics(prefix: "ble", gatewayID: "gw-1")

    static func discovery(_ settings: GatewayConfiguration.HomeAssistant = .init()) -> HomeAssistantDiscovery {
        HomeAssistantDiscovery(settings: settings, topics: topics, version: "0.1.0")
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func configuration(_ yaml: String) throws -> GatewayConfiguration {
        var reader = YAMLConfigurationReader()
        return try reader.read(yaml)
    }

    static let thermometer = """
        homeassistant: {enabled: true}
        peripherals:
          - address: "C0:FF:EE:00:00:02"
            name: thermo
            subscribe: [{service: "181A", characteristic: "2A6E"}]
            writable: [{service: "1802", characteristic: "2A06"}]
        regions:
          - {id: desk, address: "C0:FF:EE:00:00:01"}
        """

    @Test func theGatewayDeviceIsOneDocumentWithItsDiagnosticEntitiesAndRegions() throws {
        let c = try Self.configuration(Self.thermometer)
        let d = Self.discovery(c.homeAssistant)
        let gateway = d.gatewayDevice(regions: c.regions, remoteConfig: false)
        #expect(d.topic(for: gateway.objectID) == "homeassistant/device/gw-1/blegateway_gw-1/config")
        let availability =
            #"[{"topic":"ble/gw-1/status","value_template":"{{ value_json.state }}","#
            + #""payload_available":"online","payload_not_available":"offline"}]"#
        let expected =
            #"{"dev":{"identifiers":["blegateway_gw-1"],"name":"gw-1","manufacturer":"BLEGateway","#
            + #""model":"Bluetooth LE to MQTT gateway","sw_version":"0.1.0"},"#
            + #""o":{"name":"blegateway","sw":"0.1.0","url":"https://github.com/blegateway/blegateway"},"cmps":{"#
            + #""connectivity":{"p":"binary_sensor","unique_id":"blegateway_gw-1_connectivity","#
            + #""object_id":"blegateway_gw-1_connectivity","name":"Connectivity","device_class":"connectivity","#
            + #""entity_category":"diagnostic","state_topic":"ble/gw-1/status","#
            + #""value_template":"{{ value_json.state }}","#
            + #""payload_on":"online","payload_off":"offline"},"#
            + #""adapter":{"p":"sensor","unique_id":"blegateway_gw-1_adapter","object_id":"blegateway_gw-1_adapter","#
            + #""name":"Adapter","availability":\#(availability),"entity_category":"diagnostic","#
            + #""state_topic":"ble/gw-1/adapter","value_template":"{{ value_json.state }}","#
            + #""json_attributes_topic":"ble/gw-1/adapter","json_attributes_template":"{{ {'reason': "#
            + #"value_json.get('reason'), 'device': value_json.get('device'), 'scanning': value_json.get('scanning')} "#
            + #"| tojson }}"},"#
            + #""spool_depth":{"p":"sensor","unique_id":"blegateway_gw-1_spool_depth","#
            + #""object_id":"blegateway_gw-1_spool_depth","name":"Spool depth","availability":\#(availability),"#
            + #""state_class":"measurement","unit_of_measurement":"readings","entity_category":"diagnostic","#
            + #""state_topic":"ble/gw-1/health","value_template":"{{ value_json.spool.depth }}"},"#
            + #""messages_per_s":{"p":"sensor","unique_id":"blegateway_gw-1_messages_per_s","#
            + #""object_id":"blegateway_gw-1_messages_per_s","name":"Messages per second","#
            + #""availability":\#(availability),"state_class":"measurement","unit_of_measurement":"msg/s","#
            + #""entity_category":"diagnostic","state_topic":"ble/gw-1/health","#
            + #""value_template":"{{ value_json.publish.rate_per_s }}"},"#
            + #""dropped_samples":{"p":"sensor","unique_id":"blegateway_gw-1_dropped_samples","#
            + #""object_id":"blegateway_gw-1_dropped_samples","name":"Dropped samples","#
            + #""availability":\#(availability),"#
            + #""state_class":"total_increasing","unit_of_measurement":"samples","entity_category":"diagnostic","#
            + #""state_topic":"ble/gw-1/health","value_template":"{{ value_json.spool.dropped_samples }}"},"#
            + #""uptime":{"p":"sensor","unique_id":"blegateway_gw-1_uptime","object_id":"blegateway_gw-1_uptime","#
            + #""name":"Uptime","availability":\#(availability),"device_class":"duration","state_class":"measurement","#
            + #""unit_of_measurement":"s","entity_category":"diagnostic","state_topic":"ble/gw-1/health","#
            + #""value_template":"{{ value_json.uptime_s }}"},"#
            + #""version":{"p":"sensor","unique_id":"blegateway_gw-1_version","object_id":"blegateway_gw-1_version","#
            + #""name":"Version","availability":\#(availability),"entity_category":"diagnostic","#
            + #""state_topic":"ble/gw-1/status","value_template":"{{ value_json.version }}"},"#
            + #""region_desk":{"p":"binary_sensor","unique_id":"blegateway_gw-1_region_desk","#
            + #""object_id":"blegateway_gw-1_region_desk","name":"desk","availability":\#(availability),"#
            + #""device_class":"presence","state_topic":"ble/gw-1/regions/desk","#
            + #""value_template":"{{ {'inside': 'ON', 'outside': 'OFF'}.get(value_json.state, 'None') }}","#
            + #""json_attributes_topic":"ble/gw-1/regions/desk","json_attributes_template":"{{ {'event': "#
            + #"value_json.get('event'), 'beacons': value_json.get('beacons')} | tojson }}"}"#
            + #"},"qos":1}"#
        #expect(Self.text(d.document(gateway)) == expected)
        // The configuration entity only where remote configuration reports its verdicts.
        #expect(!gateway.components.contains { $0.id == "config" })
        #expect(d.gatewayDevice(regions: [], remoteConfig: true).components.contains { $0.id == "config" })
    }

    @Test func aPeripheralIsADeviceViaTheGatewayWithOneSensorPerCharacteristicAndItsWritableControl() throws {
        let c = try Self.configuration(Self.thermometer)
        let d = Self.discovery(c.homeAssistant)
        let p = try #require(d.peripheralDevice(c.peripherals[0]))
        #expect(d.topic(for: p.objectID) == "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000002/config")
        #expect(
            Self.text(p.device) == #"{"identifiers":["blegateway_gw-1_c0ffee000002"],"#
                + #""connections":[["bluetooth","C0:FF:EE:00:00:02"]],"name":"thermo","via_device":"blegateway_gw-1"}"#)
        #expect(p.components.map(\.id) == ["link", "rssi", "char_2a6e", "write_2a06"])
        let temperature = try #require(p.components.first { $0.id == "char_2a6e" })
        #expect(
            Self.text(temperature.options)
                == #"{"p":"sensor","unique_id":"blegateway_gw-1_c0ffee000002_char_2a6e","#
                + #""object_id":"blegateway_gw-1_c0ffee000002_char_2a6e","name":"Temperature","#
                + #""availability":[{"topic":"ble/gw-1/status","value_template":"{{ value_json.state }}","#
                + #""payload_available":"online","payload_not_available":"offline"}],"device_class":"temperature","#
                + #""state_class":"measurement","unit_of_measurement":"°C","#
                + #""state_topic":"ble/gw-1/peripherals/c0ffee000002/char/2a6e","#
                + #""value_template":"{{ value_json.get('value', {}).get('temperature_c') }}"}"#)
        // Alert Level is a number 0…2 sending the write command (docs/TOPICS.md) with the value as one hex byte.
        let alert = try #require(p.components.first { $0.id == "write_2a06" })
        #expect(alert.platform == "number")
        let alertText = Self.text(alert.options)
        #expect(alertText.contains(#""command_topic":"ble/gw-1/peripherals/c0ffee000002/write","#))
        #expect(
            alertText.contains(
                #""command_template":"{\"characteristic\":\"2a06\",\"service\":\"1802\","#
                    + #"\"value\":\"{{ '%02x' % (value | int) }}\",\"id\":\"homeassistant-write_2a06\"}","min":0,"max":2,"#
            ))
    }

    @Test func onlyWritableCharacteristicsGetControlsAndConfiguredControlsChooseTheirType() throws {
        let c = try Self.configuration(
            """
            homeassistant:
              enabled: true
              controls:
                - {characteristic: "FFF1", entity: button, press: "01"}
                - {characteristic: "FFF2", entity: switch, "on": "01", "off": "00"}
                - {characteristic: "FFF3", entity: number, min: 0, max: 1000}
                - {characteristic: "FFF4", entity: button, press: "02"}
            peripherals:
              - address: "C0:FF:EE:00:00:03"
                writable: [{characteristic: "FFF1"}, {characteristic: "FFF2"}, {characteristic: "FFF3"},
                           {characteristic: "FFF5"}]
            """)
        let d = Self.discovery(c.homeAssistant)
        let p = try #require(d.peripheralDevice(c.peripherals[0]))
        // FFF4 is not writable on this peripheral, FFF5 has no type: neither appears.
        #expect(
            p.components.filter { $0.id.hasPrefix("write_") }.map { "\($0.id):\($0.platform)" }
                == ["write_fff1:button", "write_fff2:switch", "write_fff3:number"])
        let number = Self.text(p.components.first { $0.id == "write_fff3" }!.options)
        #expect(number.contains(#"{{ '%02x%02x' % ((value | int) % 256, (value | int) // 256) }}"#), "\(number)")
        let button = Self.text(p.components.first { $0.id == "write_fff1" }!.options)
        #expect(
            button.contains(
                #""payload_press":"{\"characteristic\":\"fff1\",\"value\":\"01\","#
                    + #"\"id\":\"homeassistant-write_fff1\"}""#),
            "\(button)")
    }

    @Test func namesAreEscapedCutAndNeverShapeATopic() throws {
        #expect(HomeAssistantDiscovery.displayName("Thermo\tlobby\u{07}\u{200B}  x") == "Thermo lobby x")
        #expect(HomeAssistantDiscovery.displayName("\u{01}\u{02} ") == nil)
        #expect(HomeAssistantDiscovery.displayName(String(repeating: "é", count: 100))?.count == 64)
        var intent = PeripheralIntent(
            match: .address(BDAddress("C0:FF:EE:00:00:04")!),
            name: "evil/+/#\"name\"\n")
        intent.subscribe = [.init(characteristic: .init(characteristic: BluetoothUUID("2A6F")!))]
        let d = Self.discovery()
        let p = try #require(d.peripheralDevice(intent))
        #expect(d.topic(for: p.objectID) == "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000004/config")
        #expect(Self.text(p.device).contains(#""name":"evil/+/#\"name\"""#), "\(Self.text(p.device))")
        // Object ids are [a-z0-9_-] whatever the gateway id or region id holds (dots are allowed there).
        #expect(HomeAssistantDiscovery.objectID("Lab.2") == "lab_2")
    }

    // MARK: - Lifecycle

    static func messages(_ m: [HomeAssistantAnnouncer.Message]) -> [String] {
        m.map { $0.payload.isEmpty ? "remove \($0.topic)" : "publish \($0.topic)" }
    }

    @Test func configurationChangesPublishWhatChangedAndRemoveWhatWasRemoved() throws {
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        var c = try Self.configuration(Self.thermometer)
        let gatewayTopic = "homeassistant/device/gw-1/blegateway_gw-1/config"
        let peripheralTopic = "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000002/config"
        #expect(Self.messages(a.configure(c)) == ["publish \(gatewayTopic)", "publish \(peripheralTopic)"])
        // Nothing changed: nothing sent (Home Assistant would only compare and ignore it).
        #expect(a.configure(c).isEmpty)
        // The region goes: the gateway's document once more, the region's component as a tombstone.
        c.regions = []
        let withoutRegion = a.configure(c)
        #expect(Self.messages(withoutRegion) == ["publish \(gatewayTopic)"])
        #expect(Self.text(withoutRegion[0].payload).hasSuffix(#""region_desk":{"p":"binary_sensor"}},"qos":1}"#))
        // The tombstone went once: the next document has none.
        #expect(a.configure(c).isEmpty)
        // The peripheral goes: an empty retained payload removes the device.
        c.peripherals = []
        #expect(Self.messages(a.configure(c)) == ["remove \(peripheralTopic)"])
        // Home Assistant comes online: everything in force again.
        #expect(Self.messages(a.homeAssistantOnline()) == ["publish \(gatewayTopic)"])
    }

    /// Ids that differ only in case or punctuation are different gateways: each gets device and unique ids of its own
    /// (they used to be folded to one, so two gateways shared entities), and its documents live under a node id that
    /// is its own id, which an ACL can match (`pattern write homeassistant/device/%u/#`).
    @Test(arguments: [
        ("gw-a", "blegateway_gw-a", "gw-a"), ("GW-A", "blegateway_GW-A", "GW-A"), ("gw_a", "blegateway_gw__a", "gw_a"),
        ("gw.a", "blegateway_gw_Da", "gw_Da"), ("gw__a", "blegateway_gw____a", "gw__a"),
    ])
    func gatewayIdsThatDifferOnlyInCaseOrPunctuationGetDevicesOfTheirOwn(_ id: String, _ device: String, _ node: String)
        throws
    {
        #expect(HomeAssistantDiscovery.gatewayDeviceID(id) == device)
        #expect(HomeAssistantDiscovery.nodeID(id) == node)
        let d = HomeAssistantDiscovery(
            settings: .init(), topics: try Topics(prefix: "blegateway", gatewayID: id), version: "0.1.0")
        #expect(d.topic(for: device) == "homeassistant/device/\(node)/\(device)/config")
    }

    /// Documents an earlier version left without a node id (`<prefix>/device/blegateway_gw-1…/config`) are this
    /// gateway's and are removed once the gateway publishes under its node.
    @Test func aDocumentAnEarlierVersionLeftWithoutANodeIdIsRemoved() throws {
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        _ = a.configure(try Self.configuration(Self.thermometer))
        let legacy = "homeassistant/device/blegateway_gw-1/config"
        let ours = Array(#"{"dev":{"identifiers":["blegateway_gw-1"]}}"#.utf8)
        #expect(a.retainedDocument(topic: legacy, payload: ours) == [.init(topic: legacy, payload: [])])
    }

    @Test func aDocumentAnEarlierRunLeftForADeviceNoLongerConfiguredIsRemoved() throws {
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        let c = try Self.configuration(Self.thermometer)
        _ = a.configure(c)
        let old = "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000009/config"
        let ours = Array(
            #"{"dev":{"identifiers":["blegateway_gw-1_c0ffee000009"],"via_device":"blegateway_gw-1"}}"#.utf8)
        #expect(a.retainedDocument(topic: old, payload: ours) == [.init(topic: old, payload: [])])
        // Another gateway's device, one announced now, an empty one, or under another prefix: left alone.
        let theirs = Array(#"{"dev":{"identifiers":["blegateway_gw-1_x"],"via_device":"blegateway_gw-2"}}"#.utf8)
        #expect(a.retainedDocument(topic: old, payload: theirs).isEmpty)
        let current = "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000002/config"
        #expect(a.retainedDocument(topic: current, payload: ours).isEmpty)
        #expect(a.retainedDocument(topic: old, payload: []).isEmpty)
        #expect(a.retainedDocument(topic: "ha/device/gw-1/blegateway_gw-1_c0ffee000009/config", payload: ours).isEmpty)
        // With an entry that takes devices by name, an unknown address may be one of them, not yet heard: kept.
        var byName = c
        byName.peripherals.append(PeripheralIntent(match: .namePrefix("Thermo")))
        _ = a.configure(byName)
        #expect(a.retainedDocument(topic: old, payload: ours).isEmpty)
    }

    @Test func aDeviceFoundByNameIsAnnouncedOnceWhileItsEntryStays() throws {
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        var c = try Self.configuration(
            """
            homeassistant: {enabled: true}
            peripherals:
              - {name_prefix: "Thermo", name: thermo, subscribe: [{characteristic: "2A6E"}]}
            """)
        #expect(Self.messages(a.configure(c)) == ["publish homeassistant/device/gw-1/blegateway_gw-1/config"])
        let address = try #require(BDAddress("C0:FF:EE:00:00:05"))
        let topic = "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000005/config"
        let first = a.deviceFound(address, intent: c.peripherals[0])
        #expect(Self.messages(first) == ["publish \(topic)"])
        #expect(
            Self.text(first[0].payload)
                .contains(#""name":"thermo C0:FF:EE:00:00:05","via_device":"blegateway_gw-1""#))
        #expect(a.deviceFound(address, intent: c.peripherals[0]).isEmpty)
        #expect(Self.messages(a.homeAssistantOnline()).contains("publish \(topic)"))
        c.peripherals = []
        #expect(Self.messages(a.configure(c)) == ["remove \(topic)"])
    }

    @Test func turningDiscoveryOffOrMovingThePrefixRemovesTheOldDocuments() throws {
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        var c = try Self.configuration(Self.thermometer)
        _ = a.configure(c)
        c.homeAssistant.discoveryPrefix = "ha"
        #expect(
            Self.messages(a.configure(c)) == [
                "remove homeassistant/device/gw-1/blegateway_gw-1/config",
                "remove homeassistant/device/gw-1/blegateway_gw-1_c0ffee000002/config",
                "publish ha/device/gw-1/blegateway_gw-1/config",
                "publish ha/device/gw-1/blegateway_gw-1_c0ffee000002/config",
            ])
        #expect(a.prefix == "ha")
        c.homeAssistant.enabled = false
        #expect(
            Self.messages(a.configure(c)) == [
                "remove ha/device/gw-1/blegateway_gw-1/config",
                "remove ha/device/gw-1/blegateway_gw-1_c0ffee000002/config",
            ])
        #expect(a.prefix == nil && a.homeAssistantOnline().isEmpty)
    }

    @Test func devicesBeyondTheCapAreCountedNotAnnounced() throws {
        var c = try Self.configuration(Self.thermometer)
        for n in 3...9 {
            c.peripherals.append(PeripheralIntent(match: .address(BDAddress("C0:FF:EE:00:00:0\(n)")!)))
        }
        c.homeAssistant.maxDevices = 3
        var a = HomeAssistantAnnouncer(topics: Self.topics, version: "0.1.0")
        #expect(a.configure(c).count == 3)
        #expect(a.announcedDevices == 3 && a.refusedDevices == 6)
        c.homeAssistant.maxDevices = 2
        // Over the lower cap: the last one announced is taken back.
        #expect(
            Self.messages(a.configure(c)) == ["remove homeassistant/device/gw-1/blegateway_gw-1_c0ffee000003/config"])
        #expect(a.refusedDevices == 7)
    }

    // MARK: - Configuration

    @Test func aDiscoveryPrefixWithWildcardsIsRefusedAtConfigCheck() throws {
        for bad in ["home/+", "#", "a//b", "ha assistant"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try Self.configuration("homeassistant: {discovery_prefix: \"\(bad)\"}")
            }
            let v = RemoteConfigDocument.read(Array(#"{"homeassistant": {"discovery_prefix": "\#(bad)"}}"#.utf8))
            #expect(v.overlay == nil && v.errors.first?.path == "$.homeassistant.discovery_prefix", "\(v.errors)")
        }
        let c = try Self.configuration("homeassistant: {enabled: true, discovery_prefix: site-1/ha, max_devices: 20}")
        #expect(c.homeAssistant.discoveryPrefix == "site-1/ha" && c.homeAssistant.maxDevices == 20)
    }

    @Test func theShippedExampleWithItsControlsUncommentedIsValid() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/gateway.yaml")
        let lines = try String(contentsOf: url, encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == "homeassistant:" })
        let end = try #require(lines[start...].firstIndex { $0.isEmpty })
        let example = lines[start..<end].map { $0.hasPrefix("  # ") ? "  " + $0.dropFirst(4) : String($0) }
            .joined(separator: "\n")
        var reader = YAMLConfigurationReader()
        let c = try reader.read(example)
        #expect(reader.warnings.isEmpty, "\(reader.warnings)")
        #expect(!c.homeAssistant.enabled && c.homeAssistant.discoveryPrefix == "homeassistant")
        #expect(c.homeAssistant.controls.map(\.kind) == [.button, .switch, .number])
        #expect(c.homeAssistant.controls[1].on == [0x01] && c.homeAssistant.controls[2].max == 1000)
    }

    @Test func aRemoteDocumentSetsTheSectionAndMovesTheHash() throws {
        let document = #"{"homeassistant": {"enabled": true, "discovery_prefix": "ha2"}}"#
        let v = RemoteConfigDocument.read(Array(document.utf8))
        #expect(v.errors == [])
        var c = GatewayConfiguration()
        try #require(v.overlay).apply(to: &c)
        #expect(c.homeAssistant.enabled && c.homeAssistant.discoveryPrefix == "ha2")
        #expect(c.effectiveHash != GatewayConfiguration().effectiveHash)
        #expect(
            Self.text(c.canonicalRemoteJSON).contains(
                #""homeassistant":{"controls":[],"discovery_prefix":"ha2","enabled":true,"max_devices":100,"sensors":true}"#
            ))
    }

    @Test func aVerbatimBodyIsPublishedWithoutTheEnvelopeAndMayBeEmpty() {
        let empty = PayloadEnvelope.render(
            run: "ab", seq: 7, ts: 1, clockSynced: true,
            body: PayloadEnvelope.verbatim([]))
        #expect(empty == [])
        let doc = Array(#"{"dev":{}}"#.utf8)
        #expect(
            PayloadEnvelope.render(run: "ab", seq: 7, ts: 1, clockSynced: true, body: PayloadEnvelope.verbatim(doc))
                == doc)
        #expect(
            Self.text(PayloadEnvelope.render(run: "ab", seq: 7, ts: 1, clockSynced: true, body: doc))
                == #"{"run":"ab","seq":7,"ts":1.000,"clock_synced":true,"dev":{}}"#)
    }
}
