import BLESimulator
import Foundation
import Testing

@testable import BLEFleet

/// One geometry for the simulated air and for presence: the office scenario's site, as `blegateway sim` writes it,
/// reads in the fleet service with every gateway placed where the radio has it.
struct OfficeSiteTests {
    static let office = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/scenarios/office.yaml").path

    @Test func theOfficeScenarioShipsASiteWithItsGatewaysPlacedAsTheRadioHasThem() throws {
        let scenario = try ScenarioLoader.load(path: Self.office)
        let site = try SiteDescription(text: try #require(scenario.siteYAML))
        #expect(Set(site.rooms.map(\.id)) == ["lobby", "lab", "corridor", "kitchen"])
        #expect(site.gateways.count == scenario.gateways.count)
        for g in scenario.gateways {
            let placed = try #require(site.gateways[g.id])
            #expect(placed.position == .init(g.position.x, g.position.y, g.position.z))
            // Each gateway stands in the room it is said to be in.
            let room = try #require(site.room(placed.room))
            #expect(
                Geometry.contains(room.polygon, .init(g.position.x, g.position.y)), "\(g.id) is not inside \(room.id)")
        }
    }

    @Test func aScenarioSiteThatPlacesGatewaysItselfIsRefused() throws {
        let text = """
            name: s
            gateways: [{id: gw, position: [0, 0, 2], room: a}]
            site: {rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}], gateways: []}
            """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("site-\(UUID()).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { _ = try ScenarioLoader.load(path: path) } throws: {
            "\($0)".contains("site.gateways comes from the scenario")
        }
    }
}
