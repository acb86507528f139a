import Foundation
import Testing

@testable import BLEFleet

/// Each tag's own settings in a site description (`tags:`): read and checked by path, and what each changes in the
/// presence engine, the rooms' occupancy and the tracker's document.
struct TagSettingsTests {
    static let tag = PresenceEngineTests.tag
    static let sensor = "mac-a4c138000073"

    static func site(_ tags: String) throws -> SiteDescription {
        try SiteDescription(text: SiteDescriptionTests.office + "\ntags:\n" + tags)
    }

    @Test func aTagsSettingsReadWithTheSitesDefaultsForWhatTheyLeaveOut() throws {
        let s = try Self.site(
            """
              - {beacon: \(Self.tag), name: "Alice's badge", person: true, rssi_at_1m: -62, dwell_s: 1.5,
                 settle_s: 30, ignore_gateways: [gw-lab]}
            """)
        let t = try #require(s.tags[Self.tag])
        #expect(t.name == "Alice's badge" && t.person && t.rssiAt1m == -62 && t.ignoreGateways == ["gw-lab"])
        let p = s.presence(for: Self.tag)
        #expect(p.dwellS == 1.5 && p.settleS == 30)
        #expect(p.settledDwellS == PresenceSettings().settledDwellS, "left out: the site's")
        #expect(s.presence(for: "another") == s.presence)
        #expect(s.people == [Self.tag])
        #expect(s.countsAsPerson(Self.tag) && !s.countsAsPerson(Self.sensor))
        #expect(try SiteDescription(text: SiteDescriptionTests.office).countsAsPerson(Self.sensor), "no people named")
    }

    @Test(arguments: [
        (
            "  - {beacon: a, ignore_gateways: [gw-attic]}\n",
            #"site.tags[0].ignore_gateways[0]: no gateway "gw-attic" in gateways"#
        ),
        ("  - {beacon: a}\n  - {beacon: a}\n", #"site.tags[1].beacon: tag "a" is listed twice"#),
        ("  - {beacon: a, rssi_at_1m: 12}\n", "site.tags[0].rssi_at_1m: expected dBm from -120 to 0"),
        ("  - {beacon: a, person: maybe}\n", "site.tags[0].person: expected true or false"),
        ("  - {beacon: a, dwell_s: -1}\n", "site.tags[0].dwell_s: expected a number ≥ 0"),
        (
            "  - {beacon: a, colour: red}\n",
            "site.tags[0].colour: unknown key; expected one of beacon, dwell_s, "
                + "ignore_gateways, name, person, rssi_at_1m, settle_s, settled_dwell_s, still_dwell_s"
        ),
        ("  - {name: nobody}\n", "site.tags[0].beacon: missing"),
    ])
    func badTagSettingsAreNamedByPath(_ tags: String, _ problem: String) {
        do {
            _ = try SiteDescription(text: SiteDescriptionTests.office + "\ntags:\n" + tags, path: "site")
            Issue.record("accepted \(tags)")
        } catch {
            #expect("\(error)" == problem)
        }
    }

    /// A gateway the tag's settings ignore: its readings are left out and counted, so the lab's gateway hearing the
    /// badge through a wall does not pull it there.
    @Test func readingsFromAnIgnoredGatewayAreLeftOutAndCounted() throws {
        var e = PresenceEngine(site: try Self.site("  - {beacon: \(Self.tag), ignore_gateways: [gw-lab]}\n"))
        let reports = PresenceEngineTests.run(&e, from: 1000, seconds: 10, at: { _ in (21, 3) })
        #expect(e.counters.ignoredReadings == 10)
        #expect(reports.last?.gateways.map(\.gateway).sorted() == ["gw-kitchen", "gw-lobby"])
    }

    /// A phone whose RSSI at 1 m is 10 dB below what the gateways assumed: with the tag's own calibration its
    /// distances are √10 times longer at exponent 2 (from the RSSI each reading carries).
    @Test func aTagsOwnCalibrationSetsItsDistancesFromTheRSSI() throws {
        var e = PresenceEngine(site: try Self.site("  - {beacon: \(Self.tag), rssi_at_1m: -70}\n"))
        // -60 - 20 log10(d) is the test readings' RSSI: at -70 dBm for 1 m, a reading at d is 10^(1/2)·d/… away.
        e.observe(
            beacon: Self.tag, reading: .init(gateway: "gw-lab", distance: 4, accuracy: 1, rssi: -80, ts: 1), now: 1)
        _ = e.tick(now: 1)
        let d = try #require(e.report(of: Self.tag)?.gateways.first { $0.gateway == "gw-lab" }?.distance)
        #expect(abs(d - pow(10, 10.0 / 20)) < 1e-9, "10^((−70 − (−80)) / 20) m")
    }

    /// Rooms count people once the site names any: the sensor on the shelf is not someone in the lab.
    @Test func onlyPeopleFillARoomWhenTheSiteNamesAny() throws {
        let site = try Self.site("  - {beacon: \(Self.tag), person: true}\n")
        var p = FleetPresence(sites: ["t"], configured: site)
        _ = p.takeRoomChanges()
        for t in 0..<10 {
            for beacon in [Self.tag, Self.sensor] {
                for r in PresenceEngineTests.readings(site, at: (21, 3), ts: Double(t)) {
                    p.observe(
                        "t", gateway: r.gateway, beacon: beacon,
                        reading: .init(
                            kind: "ibeacon", address: "", name: nil, rssi: r.rssi, samples: 1,
                            distanceM: r.distance, accuracyM: r.accuracy, proximity: nil, ts: r.ts,
                            receivedAt: Double(t), serviceTs: r.ts),
                        now: Double(t))
                }
            }
            _ = p.tick(now: Double(t))
        }
        let lab = p.occupancy["t"]?.occupancy(of: "lab")
        #expect(lab?.tags == [Self.tag])
    }

    /// The tracker is named as the site names the tag; renamed in a new description, its document goes again.
    @Test func aTagsTrackerCarriesItsNameAndARenameAnnouncesItAgain() throws {
        let doc = String(
            decoding: PresenceDiscovery.document(
                prefix: "t", beacon: Self.tag, status: "t/fleet/status",
                name: "Alice\u{7}'s badge"), as: UTF8.self)
        #expect(doc.contains(#""name":"Alice's badge""#))
        let unnamed = String(
            decoding: PresenceDiscovery.document(prefix: "t", beacon: Self.tag, status: "s"),
            as: UTF8.self)
        #expect(unnamed.contains(#""name":"Tag \#(Self.tag)""#))
        var p = FleetPresence(sites: ["t"], configured: try Self.site("  - {beacon: \(Self.tag), name: Alice}\n"))
        let first = p.announce("t", beacon: Self.tag)
        let again = p.announce("t", beacon: Self.tag)
        #expect(first && !again)
        let renamed = SiteDescriptionTests.office + "\ntags:\n  - {beacon: \(Self.tag), name: Bob}\n"
        let problem = p.receiveSite("t", payload: Array(renamed.utf8), isFirstSite: true)
        #expect(problem == nil)
        let afterRename = p.announce("t", beacon: Self.tag)
        #expect(afterRename, "a new description: announced again, with its name")
    }
}
