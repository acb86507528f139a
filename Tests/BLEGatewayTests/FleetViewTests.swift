import Testing
@testable import BLEGateway

@Suite struct FleetViewTests {
    func msg(_ json: String) -> [UInt8] { Array(json.utf8) }

    @Test func foldsStatusAdapterAndBeaconsPerGateway() {
        var v = FleetView(prefix: "demo")
        v.receive(topic: "demo/gw-lobby/status", payload: msg(#"{"seq":1,"state":"online","version":"0.1.0"}"#))
        v.receive(topic: "demo/gw-lobby/adapter", payload: msg(#"{"seq":2,"state":"poweredOn","address":"C0:FF:EE:00:00:01"}"#))
        v.receive(topic: "demo/gw-lobby/beacons/ibeacon-aa-1-2",
                  payload: msg(#"{"seq":3,"kind":"ibeacon","rssi":-61.5,"samples":9}"#))
        #expect(v.gateways["gw-lobby"]?.status == "online")
        #expect(v.gateways["gw-lobby"]?.adapter == "poweredOn")
        #expect(v.beacons["gw-lobby"]?["ibeacon-aa-1-2"]?.rssi == -61.5)
        #expect(v.render().contains { $0.contains("ibeacon-aa-1-2") && $0.contains("-61.5") })
    }

    @Test func countsForwardSeqJumpsAsGaps() {
        var v = FleetView(prefix: "p")
        v.receive(topic: "p/gw/health", payload: msg(#"{"seq":1}"#))
        v.receive(topic: "p/gw/health", payload: msg(#"{"seq":2}"#))
        v.receive(topic: "p/gw/health", payload: msg(#"{"seq":5}"#))
        #expect(v.gateways["gw"]?.gaps == 1)
    }

    @Test func ignoresOtherPrefixesAndCountsUndecodablePayloads() {
        var v = FleetView(prefix: "p")
        v.receive(topic: "q/gw/status", payload: msg("{}"))
        v.receive(topic: "p/gw/status", payload: [0xFF, 0x00])
        #expect(v.messageCount == 1)
        #expect(v.undecodable == 1)
    }
}
