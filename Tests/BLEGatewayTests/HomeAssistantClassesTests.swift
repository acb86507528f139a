import BLEDomain
import BLEHCI
import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// Every entity the gateway can announce, judged by Home Assistant's own code: each component through its MQTT
/// platform's discovery schema, each sensor's device class against the state classes and units Home Assistant takes
/// for it (Tests/tools/ha_discovery_check.py, under the Home Assistant venv make test installs). The real Home
/// Assistant test sees only the quantities its simulator sends; this sees every one in the tables, so a volume
/// announced as a measurement or a unit Home Assistant does not know for a class fails here.
@Suite(
    .enabled(
        if: TestDependency.runs(HomeAssistantVenv.isAvailable),
        "needs \(HomeAssistantVenv.python) (make test installs it)"))
struct HomeAssistantClassesTests {
    static let everything = """
        homeassistant:
          enabled: true
          controls:
            - {characteristic: "FFF1", entity: button, press: "01"}
            - {characteristic: "FFF2", service: "FFF0", entity: switch, "on": "01", "off": "00"}
            - {characteristic: "FFF3", entity: number, min: 0, max: 1000}
        remote_config: {enabled: true}
        peripherals:
          - address: "C0:FF:EE:00:00:02"
            name: every characteristic
            subscribe: [\(HomeAssistantDiscovery.characteristicKinds.keys.sorted().map {
                "{characteristic: \"\(String(format: "%04X", $0))\"}" }.joined(separator: ", ")), {characteristic: "FFF9"}]
            writable: [{characteristic: "2A06"}, {characteristic: "FFF1"}, {service: "FFF0", characteristic: "FFF2"},
                       {characteristic: "FFF3"}]
        regions:
          - {id: desk, address: "C0:FF:EE:00:00:01"}
        """

    /// Every key the sensor tables know, with a second value of one (an ordinal), as one heard sensor.
    static var everyKey: [String] {
        Array(HomeAssistantDiscovery.quantityKinds.keys) + Array(HomeAssistantDiscovery.binaryKinds.keys)
            + Array(HomeAssistantDiscovery.eventKinds.keys) + ["temperature_c_2", "button_event_2", "a_new_quantity"]
    }

    @Test func everyEntityTheGatewayCanAnnounceIsOneHomeAssistantAccepts() throws {
        try TestDependency.require(HomeAssistantVenv.isAvailable, HomeAssistantVenv.python)
        var reader = YAMLConfigurationReader()
        let c = try reader.read(Self.everything)
        let d = HomeAssistantDiscovery(
            settings: c.homeAssistant, topics: try Topics(prefix: "blegateway", gatewayID: "gw-1"), version: "0.1.0")
        let sensor = HomeAssistantDiscovery.HeardSensor(
            address: BDAddress(rawValue: 0xA4C1_3800_0073), model: "BTHome", keys: Self.everyKey)
        let devices = d.devices(for: c, sensors: [sensor])
        #expect(devices.count == 3, "the gateway, the peripheral and the sensor")
        var list = "["
        for (i, device) in devices.enumerated() {
            list += (i == 0 ? "" : ",") + #"{"topic":"\#(d.topic(for: device.objectID))","document":"#
            list += String(decoding: d.document(device), as: UTF8.self) + "}"
        }
        list += "]"
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("ha-documents-\(UUID()).json")
        try list.write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../tools/ha_discovery_check.py").standardized.path
        let run = try ToolRun.run("/bin/sh", ["-c", "'\(HomeAssistantVenv.python)' '\(script)' < '\(input.path)'"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains(" components checked, 0 problems"), "\(run.output)")
    }
}
