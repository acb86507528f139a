import BLETestSupport
import Testing

@testable import BLEFleet

/// The site description is operator input: what is wrong is named by its path, and nothing half-read is used.
struct SiteDescriptionTests {
    static let office = OfficeSite.yaml

    @Test func anOfficeDescriptionReadsWithEveryRoomAndPlacedGateway() throws {
        let site = try SiteDescription(text: Self.office)
        #expect(site.rooms.map(\.id) == ["lobby", "lab", "corridor", "kitchen"])
        #expect(site.gateways["gw-lab"]?.position == .init(20, 5, 2.5))
        #expect(site.gateways["gw-lab"]?.room == "lab")
        #expect(site.floor(ofRoom: "kitchen")?.name == "Ground floor")
        #expect(site.presence == PresenceSettings())
    }

    /// `<prefix>/fleet/site` is written by whoever may publish there: a key that is itself a mapping or a list once
    /// stopped the fleet service inside Yams' constructor (found by the FleetParsers fuzzer). Each is a refusal
    /// naming where it is, as is a key given twice and a document nested past the reader's depth.
    @Test func aKeyThatIsNotTextADuplicateKeyAndDeepNestingAreRefusalsNotACrash() {
        let cases: [(String, String)] = [
            (
                "rooms:\n  - {id: a, polygon: [[0, 0], [1, 0], [1, 1]]}\ngateways:\n  - {id: g, room: a}: 1\n",
                "site.gateways[0]"
            ),
            ("? [floors]\n: 1\n", "site"),
            ("rooms: []\nrooms: []\n", "site.rooms"),
            (String(repeating: "[", count: 200) + String(repeating: "]", count: 200), "site"),
        ]
        for (text, path) in cases {
            #expect("\(text.prefix(40))") {
                try SiteDescription(text: text)
            } throws: { e in
                (e as? SiteDescription.Problem)?.path.hasPrefix(path) == true
            }
        }
    }

    @Test func jsonIsReadAsWellAsYAML() throws {
        let site = try SiteDescription(
            text: #"{"rooms":[{"id":"a","polygon":[[0,0],[1,0],[1,1]]}],"gateways":[{"id":"g","room":"a"}]}"#)
        #expect(site.floors.map(\.id) == ["ground"])
        #expect(site.gateways["g"]?.position == nil)
    }

    @Test(arguments: [
        ("rooms: []", "site.rooms: give at least one room"),
        ("rooms: [{id: a, polygon: [[0, 0], [1, 1]]}]", "site.rooms[0].polygon: a room needs at least 3 corners"),
        ("rooms: [{id: a, polygon: [[0, 0], [1, 1], [2, 2]]}]", "site.rooms[0].polygon: the corners enclose no area"),
        ("rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]], colour: red}]", "site.rooms[0].colour: unknown key"),
        (
            "rooms: [{id: a/b, polygon: [[0, 0], [1, 0], [1, 1]]}]",
            "site.rooms[0].id: \"a/b\": expected 1–64 characters"
        ),
        (
            "rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}, {id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]",
            "site.rooms: room \"a\" is listed twice"
        ),
        ("rooms: [{id: a, floor: roof, polygon: [[0, 0], [1, 0], [1, 1]]}]", "site.rooms[0].floor: no floor \"roof\""),
        (
            "rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]\ngateways: [{id: g, room: b}]",
            "site.gateways[0].room: no room \"b\" in rooms"
        ),
        (
            "rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]\ngateways: [{id: g, position: [1, 2], room: a}]",
            "site.gateways[0].position: expected [x, y, z] in metres"
        ),
        ("rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]\ngateways: [{id: g}]", "site.gateways[0].room: missing"),
        (
            "rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]\npresence: {dwell_s: -1}",
            "site.presence.dwell_s: expected a number ≥ 0"
        ),
        (
            "rooms: [{id: a, polygon: [[0, 0], [1, 0], [1, 1]]}]\npresence: {away_after_s: 0}",
            "site.presence.away_after_s"
        ),
        ("[1, 2]", "site: expected a mapping"),
        ("rooms: [{id: a, polygon: [[0, 0], [1e9, 0], [1, 1]]}]", "beyond 100 km"),
    ])
    func badDescriptionsAreRefusedNamingThePath(_ text: String, _ expected: String) {
        #expect {
            _ = try SiteDescription(text: text)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func aFleetConfigurationTakesTheSiteInlineOrFromAFile() throws {
        let inline = try FleetSettingsFile(
            yaml: "fleet:\n  site:\n" + Self.office.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
                + "\n  homeassistant: {discovery_prefix: ha}\n")
        #expect(inline.site?.rooms.count == 4)
        #expect(inline.homeAssistantDiscoveryPrefix == "ha")
        #expect(throws: (any Error).self) { try FleetSettingsFile(yaml: "fleet:\n  site: /nonexistent/site.yaml\n") }
        #expect(throws: (any Error).self) { try FleetSettingsFile(yaml: "fleet:\n  homeassistant: {prefix: ha}\n") }
    }
}
