import Testing

@testable import BLEFleet

/// Who is in which room, in literal values: each report moves a tag, and only the rooms it left or entered change.
struct RoomOccupancyTests {
    @Test func aTagMovingChangesTheRoomItLeftAndTheRoomItEnteredOnly() throws {
        let site = try SiteDescription(text: SiteDescriptionTests.office)
        var o = RoomOccupancy()
        let (all, removed) = o.site(site)
        #expect(all.map(\.id) == ["lobby", "lab", "corridor", "kitchen"] && all.allSatisfy { !$0.occupied })
        #expect(removed.isEmpty)
        #expect(o.report(beacon: "a", room: "lab") == [.init(id: "lab", tags: ["a"])])
        #expect(o.report(beacon: "a", room: "lab").isEmpty, "the same room again: nothing changed")
        #expect(o.report(beacon: "b", room: "lab") == [.init(id: "lab", tags: ["a", "b"])])
        #expect(
            o.report(beacon: "a", room: "kitchen") == [
                .init(id: "lab", tags: ["b"]), .init(id: "kitchen", tags: ["a"]),
            ])
        #expect(o.report(beacon: "b", room: nil) == [.init(id: "lab", tags: [])], "away: the room empties")
        #expect(o.report(beacon: "c", room: "attic").isEmpty, "a room the site does not have counts nobody")
        #expect(
            RoomOccupancy.payload(o.occupancy(of: "kitchen"))
                == Array(#"{"occupied":true,"count":1,"tags":["a"]}"#.utf8))
    }

    @Test func aNewDescriptionRemovesTheRoomsItNoLongerHas() throws {
        var o = RoomOccupancy()
        _ = o.site(try SiteDescription(text: SiteDescriptionTests.office))
        _ = o.report(beacon: "a", room: "kitchen")
        let smaller = SiteDescriptionTests.office.replacingOccurrences(of: "{id: kitchen", with: "{id: pantry")
            .replacingOccurrences(of: "room: kitchen}", with: "room: pantry}")
        let (rooms, removed) = o.site(try SiteDescription(text: smaller))
        #expect(removed == ["kitchen"])
        #expect(rooms.map(\.id).contains("pantry") && !rooms.contains { $0.occupied }, "the tag's room is gone")
    }

    /// A room is a Home Assistant device with an occupancy binary sensor and a count, available while the fleet
    /// service is, its area suggested from the room's name.
    @Test func aRoomIsADeviceWithOccupancyAndACount() throws {
        let site = try SiteDescription(text: SiteDescriptionTests.office)
        let lab = try #require(site.rooms.first { $0.id == "lab" })
        let text = String(
            decoding: RoomOccupancy.document(prefix: "t", room: lab, status: FleetPresence.statusTopic("first")),
            as: UTF8.self)
        #expect(
            RoomOccupancy.discoveryTopic(discoveryPrefix: "ha", prefix: "t", room: "lab")
                == "ha/device/blegateway-fleet/blegateway_room_t_lab/config")
        #expect(text.contains(#""suggested_area":"Lab""#))
        #expect(text.contains(#""p":"binary_sensor","unique_id":"blegateway_room_t_lab_occupancy""#))
        #expect(text.contains(#""device_class":"occupancy","state_topic":"t/fleet/rooms/lab""#))
        #expect(text.contains(#""p":"sensor","unique_id":"blegateway_room_t_lab_count""#))
        #expect(text.contains(#""topic":"first/fleet/status""#), "the service's one status topic, whatever the site")
    }

    /// A room change the broker connection did not take is not lost: the site's rooms, and the removals, go again at
    /// the next connection.
    @Test func roomChangesThatWereNotPublishedGoAgainAtTheNextConnection() throws {
        var p = FleetPresence(sites: ["t"], configured: try SiteDescription(text: SiteDescriptionTests.office))
        let first = p.takeRoomChanges()
        #expect(first.count == 1 && first[0].announce)
        p.roomsNotPublished(first[0])
        p.roomsNotPublished(FleetPresence.RoomChange(prefix: "t", rooms: [], removed: ["attic"]))
        #expect(p.takeRoomChanges().isEmpty, "nothing until the connection is back")
        p.connected()
        let again = p.takeRoomChanges()
        #expect(again.count == 1)
        #expect(again.first?.rooms.map(\.id) == first[0].rooms.map(\.id))
        #expect(again.first?.removed == ["attic"] && again.first?.announce == true)
        p.connected()
        #expect(p.takeRoomChanges().isEmpty, "sent once")
    }
}

/// The gateways' areas from the site (GatewayAreaDiscovery): a document of the fleet's for each gateway's device.
struct GatewayAreaDiscoveryTests {
    /// The same device identifier the gateway announces its device under (HomeAssistantDiscovery.gatewayDeviceID,
    /// whose tests hold these same values), or Home Assistant would make a second device.
    @Test(arguments: [
        ("gw-lab", "blegateway_gw-lab"), ("gw_a", "blegateway_gw__a"), ("gw.a", "blegateway_gw_Da"),
        ("GW-A", "blegateway_GW-A"),
    ])
    func theDeviceIdentifierIsTheGatewaysOwn(_ gateway: String, _ device: String) {
        #expect(GatewayAreaDiscovery.deviceID(gateway) == device)
    }

    @Test func aGatewaysDeviceIsSuggestedItsRoomsAreaWithItsRoomAsAnEntity() throws {
        let site = try SiteDescription(text: SiteDescriptionTests.office)
        let lab = try #require(site.room("lab"))
        var renamed = lab
        renamed.name = "Bob's lab"
        let text = String(
            decoding: GatewayAreaDiscovery.document(
                prefix: "t", gateway: "gw-lab", room: renamed, status: "t/fleet/status"),
            as: UTF8.self)
        #expect(
            GatewayAreaDiscovery.topic(discoveryPrefix: "ha", prefix: "t", gateway: "gw-lab")
                == "ha/device/blegateway-fleet/blegateway_gwroom_t_gw_lab/config")
        #expect(text.contains(#""dev":{"identifiers":["blegateway_gw-lab"],"suggested_area":"Bob's lab"}"#))
        #expect(text.contains(#""value_template":"{{ 'Bob\\'s lab' }}""#))
        #expect(text.contains(#""entity_category":"diagnostic","state_topic":"t/fleet/status""#))
    }

    /// A new description: every placed gateway's document again, and those of gateways it no longer places removed.
    @Test func gatewaysTheSiteNoLongerPlacesAreRemoved() throws {
        var p = FleetPresence(sites: ["t"], configured: try SiteDescription(text: SiteDescriptionTests.office))
        _ = p.takeRoomChanges()
        let fewer = SiteDescriptionTests.office.replacingOccurrences(
            of: "  - {id: gw-kitchen, position: [10, 16, 2.5], room: kitchen}", with: "")
        #expect(p.receiveSite("t", payload: Array(fewer.utf8), isFirstSite: true) == nil)
        let change = try #require(p.takeRoomChanges().first)
        #expect(change.announce && change.removedGateways == ["gw-kitchen"])
    }
}
