import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct RegionTests {
    static let uuid = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
    static let tag = BeaconIdentity.iBeacon(uuid: uuid, major: 1, minor: 2)

    /// Feeds a sighting every 100 ms from `from` to `to` seconds (none when `rssi` is nil) and ticks.
    static func run(
        _ m: inout RegionMonitor, _ from: Double, _ to: Double, rssi: Double?, id: BeaconIdentity = tag
    ) -> [(Double, RegionEvent.Kind)] {
        var out: [(Double, RegionEvent.Kind)] = []
        var t = from
        while t < to - 1e-9 {
            let now = Duration.milliseconds(Int64((t * 1000).rounded()))
            if let rssi { out += m.observe(id, rssi: rssi, at: now).map { (t, $0.kind) } }
            out += m.tick(at: now).map { (t, $0.kind) }
            t += 0.1
        }
        return out
    }

    @Test func aRegionStartsUnknownAndIsDeterminedWithoutAnEnter() {
        var m = RegionMonitor(regions: [Region(id: "r", matcher: .iBeacon(uuid: Self.uuid))], at: .zero)
        #expect(m.state(of: "r") == .unknown)
        let e = Self.run(&m, 0, 1, rssi: -70)
        #expect(e.map(\.1) == [.determined(.inside)])
    }

    @Test func silenceDeterminesOutsideAfterTheTimeoutThenASightingEnters() {
        var m = RegionMonitor(regions: [Region(id: "r", matcher: .iBeacon(uuid: Self.uuid))], at: .zero)
        var e = Self.run(&m, 0, 12, rssi: nil)
        #expect(e.count == 1 && e[0].1 == .determined(.outside) && abs(e[0].0 - 10) < 0.05)
        e = Self.run(&m, 12, 13, rssi: -90)
        #expect(e.map(\.1) == [.determined(.inside), .entered] && e[0].0 == 12)
    }

    @Test func exitComesAfterExactlyTheTimeoutWithoutSightings() {
        var m = RegionMonitor(regions: [Region(id: "r", matcher: .iBeacon(uuid: Self.uuid, major: 1))], at: .zero)
        _ = Self.run(&m, 0, 12, rssi: nil)
        _ = Self.run(&m, 12, 20, rssi: -80)
        let e = Self.run(&m, 20, 40, rssi: nil)
        #expect(e.map(\.1) == [.determined(.outside), .exited])
        #expect(abs(e[0].0 - (19.9 + 10)) < 0.05, "last sighting at 19.9 s, exit at \(e[0].0)")
    }

    @Test func rssiBetweenTheThresholdsNeitherEntersNorExitsAndShortDipsDoNotFlap() {
        let r = Region(
            id: "r", matcher: .iBeacon(uuid: Self.uuid, major: 1, minor: 2), enterRSSI: -70, exitRSSI: -76,
            exitDwell: .seconds(5))
        var m = RegionMonitor(regions: [r], at: .zero)
        var e = Self.run(&m, 0, 20, rssi: -73)
        #expect(e.map(\.1) == [.determined(.outside)], "heard, but never strong enough to enter")
        e = Self.run(&m, 20, 21, rssi: -69)
        #expect(e.map(\.1) == [.determined(.inside), .entered])
        e = Self.run(&m, 21, 60, rssi: -73)
        e += Self.run(&m, 60, 64, rssi: -80)  // a 4 s dip below the exit threshold: within the dwell
        e += Self.run(&m, 64, 70, rssi: -73)
        #expect(e.isEmpty, "the band and the dwell hold the state: \(e)")
        e = Self.run(&m, 70, 80, rssi: -80)
        #expect(e.map(\.1) == [.determined(.outside), .exited] && abs(e[0].0 - 74.9) < 0.05)
    }

    @Test func afterAResetRegionsAreDeterminedAfreshWithoutFalseExits() {
        var m = RegionMonitor(
            regions: [
                Region(id: "here", matcher: .iBeacon(uuid: Self.uuid)),
                Region(id: "gone", matcher: .address(BDAddress(rawValue: 0x1234))),
            ], at: .zero)
        _ = Self.run(&m, 0, 11, rssi: -70)
        _ = m.observe(.address(BDAddress(rawValue: 0x1234)), rssi: -70, at: .seconds(11))
        #expect(m.state(of: "here") == .inside && m.state(of: "gone") == .inside)
        let before = m.transitions
        // The adapter was deaf for 30 s and recovered.
        let reset = m.resetToUnknown(at: .seconds(41))
        #expect(reset.map(\.kind) == [.determined(.unknown), .determined(.unknown)])
        let e = Self.run(&m, 41, 55, rssi: -70)
        let kinds = e.map(\.1)
        #expect(kinds.contains(.determined(.inside)) && !kinds.contains(.entered), "no enter for a tag that never left")
        #expect(kinds.filter { $0 == .exited }.count == 1, "only the device that really went away exits")
        #expect(m.state(of: "here") == .inside && m.state(of: "gone") == .outside)
        #expect(m.transitions == before + 1)
    }

    @Test func matchersCoverEveryRegionKind() {
        let ns = (UInt64(0xEDD1_EBEA_C04E_5DEF), UInt16(0xA017))
        let eddy = BeaconIdentity.eddystone(namespaceHigh: ns.0, namespaceLow: ns.1, instance: 0xA1)
        let cases: [(BeaconMatcher, BeaconIdentity, ArraySlice<UInt8>?, Bool)] = [
            (.iBeacon(uuid: Self.uuid), Self.tag, nil, true),
            (.iBeacon(uuid: Self.uuid, major: 1), Self.tag, nil, true),
            (.iBeacon(uuid: Self.uuid, major: 2), Self.tag, nil, false),
            (.iBeacon(uuid: Self.uuid, major: 1, minor: 2), Self.tag, nil, true),
            (.iBeacon(uuid: Self.uuid, major: 1, minor: 3), Self.tag, nil, false),
            (.eddystone(namespaceHigh: ns.0, namespaceLow: ns.1), eddy, nil, true),
            (.eddystone(namespaceHigh: ns.0, namespaceLow: ns.1, instance: 0xA1), eddy, nil, true),
            (.eddystone(namespaceHigh: ns.0, namespaceLow: ns.1, instance: 0xA2), eddy, nil, false),
            (.address(BDAddress(rawValue: 1)), .address(BDAddress(rawValue: 1)), nil, true),
            (.address(BDAddress(rawValue: 1)), Self.tag, nil, false),
            (.namePrefix("Thermo"), .address(BDAddress(rawValue: 1)), Array("Thermo lobby".utf8)[...], true),
            (.namePrefix("Thermo"), .address(BDAddress(rawValue: 1)), Array("Therm".utf8)[...], false),
            (.namePrefix("Thermo"), .address(BDAddress(rawValue: 1)), nil, false),
        ]
        for (matcher, id, name, expected) in cases {
            #expect(matcher.matches(id, name: name) == expected, "\(matcher) vs \(id)")
        }
    }
}
