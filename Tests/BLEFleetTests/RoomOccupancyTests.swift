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
        #expect(o.report(beacon: "a", room: "kitchen") == [.init(id: "lab", tags: ["b"]), .init(id: "kitchen", tags: ["a"])])
        #expect(o.report(beacon: "b", room: nil) == [.init(id: "lab", tags: [])], "away: the room empties")
        #expect(o.report(beacon: "c", room: "attic").isEmpty, "a room the site does not have counts nobody")
        #expect(RoomOccupancy.payload(o.occupancy(of: "kitchen")) == Array(#"{"occupied":true,"count":1,"tags":["a"]}"#.utf8))
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
        #expect(RoomOccupancy.discoveryTopic(discoveryPrefix: "ha", prefix: "t", room: "lab")
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
