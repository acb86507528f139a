import BLESimulator
import Foundation
import Testing
@testable import BLEGateway

/// The configuration a scenario ships for its gateways (`gateway_config:`) agrees with the scenario's world: the
/// gateways ask for no more links than their controllers hold (the office asked for 5 of 4, and every `make demo`
/// showed one sensor `disconnected — HCI 0x09 Connection Limit Exceeded`), and ranging uses the radio's exponent
/// (the office's 2.2 met the default 2.0 and distances at 4–5 m read 18–20 % long).
@Suite struct ScenarioConfigurationTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../config/scenarios").standardized.path

    /// The scenarios `make demo` runs gateways against with the configuration they ship.
    static let demoScenarios = ["office.yaml"]

    @Test(arguments: demoScenarios)
    func theShippedConfigurationFitsTheScenario(file: String) throws {
        let scenario = try ScenarioLoader.load(path: Self.directory + "/" + file)
        var reader = YAMLConfigurationReader()
        let c = try reader.read(try #require(scenario.gatewayConfigYAML))
        #expect(reader.warnings.isEmpty, "\(reader.warnings)")
        for gateway in scenario.gateways {
            #expect(c.connections.max <= gateway.maxConnections,
                    "\(gateway.id) holds \(gateway.maxConnections) links; asked: \(c.connections.max)")
        }
        #expect(abs(c.ranging.pathLossExponent - scenario.radio.pathLossExponent) < 1e-9,
                "ranging \(c.ranging.pathLossExponent) ≠ radio \(scenario.radio.pathLossExponent)")
    }
}
