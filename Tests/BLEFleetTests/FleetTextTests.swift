import Testing

@testable import BLEFleet

/// `blegateway watch` draws `FleetText`: it must fit the terminal and count gaps as the dashboard does.
@Suite struct FleetTextTests {
    static func env(_ seq: Int) -> String { #""run":"r","seq":\#(seq),"ts":5,"clock_synced":true"# }

    func fleet(gateways: Int, beacons: Int) -> FleetModel {
        var m = FleetModel(prefix: "demo")
        for g in 0..<gateways {
            let id = "gw-\(g)"
            m.receive(
                topic: "demo/\(id)/status",
                payload: Array(
                    #"{\#(Self.env(1)),"state":"online","gateway":"\#(id)","version":"0.1.0","started":1}"#.utf8),
                retained: true, now: 0)
            for b in 0..<beacons {
                m.receive(
                    topic: "demo/\(id)/beacons/b-\(b)",
                    payload: Array(
                        #"{\#(Self.env(100 + b)),"id":"b-\#(b)","kind":"other","address":"C4:BB:CA:D0:7F:7D","rssi":\#(-50 - b),"samples":3,"interval_s":1}"#
                            .utf8), retained: false, now: 0)
            }
        }
        return m
    }

    @Test func aLargeFleetFitsFiftyRowsWithWhatWasCutCounted() {
        let lines = FleetText.render(fleet(gateways: 60, beacons: 30), rows: 50, now: 0)
        #expect(lines.count <= 50)
        #expect(lines.contains { $0.hasPrefix("… ") && $0.hasSuffix(" more gateways") })
        #expect(lines.contains { $0.contains("more beacons") })
        // Strongest beacon first.
        #expect(lines.first { $0.hasPrefix("  b-") }?.hasPrefix("  b-0 ") == true)
    }

    @Test func everythingFitsWithNothingCut() {
        let lines = FleetText.render(fleet(gateways: 3, beacons: 4), rows: 50, now: 0)
        #expect(!lines.contains { $0.contains("more") })
        #expect(lines.filter { $0.hasPrefix("gw-") }.count == 3)
        #expect(lines.filter { $0.hasPrefix("  b-") }.count == 4)
    }

    @Test func offlineGatewaysComeFirstAndRetainedSeqsAreNoGaps() {
        var m = fleet(gateways: 3, beacons: 0)
        m.receive(
            topic: "demo/gw-2/status",
            payload: Array(
                #"{"run":"r","seq":null,"ts":5,"clock_synced":true,"state":"offline","gateway":"gw-2","version":"0.1.0","started":1}"#
                    .utf8), retained: false, now: 10)
        let lines = FleetText.render(m, rows: 20, now: 10)
        let rows = lines.filter { $0.hasPrefix("gw-") }
        #expect(rows.first?.hasPrefix("gw-2 ") == true)
        // The retained status had seq 1, the live beacons 100…: not a gap (the column before PROBLEMS says 0).
        #expect(rows.allSatisfy { !$0.contains("lost") })
    }
}
