import BLESimulator
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// The configuration a scenario ships for its gateways (`gateway_config:`, with each gateway's own merged over it)
/// agrees with the scenario's world: the gateways ask for no more links than their controllers hold (the office
/// asked for 5 of 4, and every `make demo` showed one sensor `disconnected — HCI 0x09 Connection Limit Exceeded`),
/// ranging uses the radio's exponent (the office's 2.2 met the default 2.0 and distances at 4–5 m read 18–20 %
/// long), and each gateway corrects its receiver's gain (gw-lab's −2 dB read 23 % long).
@Suite struct ScenarioConfigurationTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../config/scenarios").standardized.path

    /// Every shipped scenario that carries a gateway configuration (dense-hall's and fault-drill's were in a shape
    /// the reader refused, and nothing loaded them).
    static let scenariosWithConfiguration = ["office.yaml", "dense-hall.yaml", "fault-drill.yaml"]

    @Test(arguments: scenariosWithConfiguration)
    func eachGatewaysConfigurationFitsTheScenario(file: String) throws {
        let scenario = try ScenarioLoader.load(path: Self.directory + "/" + file)
        for gateway in scenario.gateways {
            let yaml = try #require(
                scenario.gatewayConfigYAMLByGateway[gateway.id], "\(gateway.id) has no configuration")
            var reader = YAMLConfigurationReader()
            let c = try reader.read(yaml)
            #expect(reader.warnings.isEmpty, "\(gateway.id): \(reader.warnings)")
            #expect(
                c.connections.max <= gateway.maxConnections,
                "\(gateway.id) holds \(gateway.maxConnections) links; asked: \(c.connections.max)")
            #expect(
                abs(c.ranging.pathLossExponent - scenario.radio.pathLossExponent) < 1e-9,
                "\(gateway.id): ranging \(c.ranging.pathLossExponent) ≠ radio \(scenario.radio.pathLossExponent)")
            #expect(
                abs(c.ranging.rssiOffsetDB + gateway.rxOffsetDB) < 1e-9,
                "\(gateway.id) receives \(gateway.rxOffsetDB) dB off; corrects \(c.ranging.rssiOffsetDB)")
        }
    }

    /// The office's per-gateway section changes only what it names: the shared peripherals and regions stay.
    @Test func aGatewaysOwnSectionMergesOverTheSharedOneKeyByKey() throws {
        let scenario = try ScenarioLoader.load(path: Self.directory + "/office.yaml")
        var shared = YAMLConfigurationReader()
        let base = try shared.read(try #require(scenario.gatewayConfigYAML))
        var own = YAMLConfigurationReader()
        let lab = try own.read(try #require(scenario.gatewayConfigYAMLByGateway["gw-lab"]))
        #expect(lab.ranging.rssiOffsetDB == 2)
        #expect(base.ranging.rssiOffsetDB == 0)
        #expect(lab.ranging.pathLossExponent == base.ranging.pathLossExponent)
        #expect(lab.peripherals.map(\.name) == base.peripherals.map(\.name))
        #expect(lab.regions.map(\.id) == base.regions.map(\.id))
    }
}
