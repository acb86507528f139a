import Testing

@testable import BLEPublishing

@Suite struct TopicsTests {
    @Test func buildsEveryTopicUnderTheGatewaysOwnPrefix() throws {
        let t = try Topics(prefix: "site-1/ble", gatewayID: "gw-lobby")
        #expect(t.status == "site-1/ble/gw-lobby/status")
        #expect(
            t.beacon("ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2")
                == "site-1/ble/gw-lobby/beacons/ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2")
        #expect(t.peripheralState("a1b2c3d4e5f6") == "site-1/ble/gw-lobby/peripherals/a1b2c3d4e5f6/state")
        #expect(t.fleetConfig == "site-1/ble/fleet/config")
    }

    @Test(arguments: ["gw/1", "gw+", "#", "", "gw\u{0}", "gw é", String(repeating: "a", count: 65), "fleet"])
    func refusesGatewayIDsThatCouldShapeATopic(_ id: String) {
        #expect(throws: Topics.InvalidIdentifier.self) { try Topics(prefix: "ble", gatewayID: id) }
    }

    @Test(arguments: ["", "a//b", "/a", "a/", "a/+", "a/#"])
    func refusesMalformedPrefixes(_ prefix: String) {
        #expect(throws: Topics.InvalidIdentifier.self) { try Topics(prefix: prefix, gatewayID: "gw") }
    }
}
