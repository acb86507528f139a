import Testing

@testable import BLEFleet

/// Literal payloads as docs/TOPICS.md shows them, folded into the model.
@Suite struct FleetModelTests {
    static let run = "4859244f6b013c23"
    static func env(_ seq: Int?, ts: Double = 1795243048.062) -> String {
        #""run":"\#(run)","seq":\#(seq.map(String.init) ?? "null"),"ts":\#(ts),"clock_synced":false"#
    }
    static let online =
        #"{\#(env(1)),"state":"online","gateway":"gw-lobby","version":"0.1.0","started":1795243043.041}"#
    static let will =
        #"{"run":"\#(run)","seq":null,"ts":1795243043.0,"clock_synced":false,"state":"offline","gateway":"gw-lobby","version":"0.1.0","started":1795243043.041,"reason":"connection lost"}"#
    static func adapter(_ seq: Int, _ state: String, reason: String? = nil) -> String {
        #"{\#(env(seq)),"state":"\#(state)","since":1795243043.064,"device":"unix:/tmp/gw.sock","mode":"exclusive","address":"00:1B:DC:F0:00:01","scanning":"extended"\#(reason.map { #","reason":"\#($0)""# } ?? "")}"#
    }
    static func health(_ seq: Int, ts: Double, depth: Int, reports: Int, dropped: Int = 0) -> String {
        #"{\#(env(seq, ts: ts)),"uptime_s":5,"spool":{"depth":\#(depth),"bytes":222488,"dropped_samples":\#(dropped),"downsampled_samples":0},"publish":{"acknowledged":116,"rate_per_s":23.2,"connected":true,"reconnects":0,"rejected":0},"scan":{"reports":\#(reports),"malformed_events":0,"tracked_beacons":29,"evicted_beacons":0},"memory":{"rss_bytes":35020800}}"#
    }
    static func beacon(_ seq: Int, name: String = "tag") -> String {
        #"{\#(env(seq)),"id":"ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4","kind":"ibeacon","address":"C4:BB:CA:D0:7F:7D","rssi":-73.4,"samples":17,"interval_s":1,"measured_power":-59,"calibration":"frame","distance_m":5.28,"accuracy_m":1.02,"proximity":"far","name":"\#(name)"}"#
    }
    static let beaconTopic = "demo/gw-lobby/beacons/ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4"

    /// `now`: the service's clock, by default a moment after the payloads' `ts` (a gateway whose clock is right).
    func fold(
        _ m: inout FleetModel, _ topic: String, _ json: String, retained: Bool = false,
        now: Double = 1795243048.5
    ) {
        m.receive(topic: topic, payload: Array(json.utf8), retained: retained, now: now)
    }

    @Test func retainedTopicsRebuildAGatewayAndLiveOnesUpdateIt() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online, retained: true)
        fold(&m, "demo/gw-lobby/adapter", Self.adapter(2, "poweredOn"), retained: true)
        fold(&m, "demo/gw-lobby/health", Self.health(145, ts: 1795243048.0, depth: 3, reports: 787))
        fold(&m, Self.beaconTopic, Self.beacon(146))
        let g = m.gateways["gw-lobby"]
        #expect(g?.status == "online")
        #expect(g?.since == 1795243043.041)
        #expect(g?.version == "0.1.0")
        #expect(g?.adapter?.scanning == "extended")
        #expect(g?.health?.spoolDepth == 3)
        #expect(g?.health?.messagesPerS == 23.2)
        #expect(g?.beacons["ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4"]?.distanceM == 5.28)
        #expect(g?.seq.gaps == 0)
        #expect(g?.problems.isEmpty == true)
    }

    /// A gateway on a cluster says which node it is on and how often it moved; an older one's health says neither.
    @Test func theNodeAGatewayIsOnAndItsFailoversAreFoldedFromItsHealth() {
        var m = FleetModel(prefix: "demo")
        let clustered = Self.health(145, ts: 1795243048.0, depth: 0, reports: 787)
            .replacingOccurrences(
                of: #""reconnects":0"#, with: #""reconnects":2,"broker":"10.0.0.2:1883","failovers":1"#)
        fold(&m, "demo/gw-lobby/health", clustered)
        #expect(m.gateways["gw-lobby"]?.health?.broker == "10.0.0.2:1883")
        #expect(m.gateways["gw-lobby"]?.health?.failovers == 1)
        fold(&m, "demo/gw-lab/health", Self.health(146, ts: 1795243048.0, depth: 0, reports: 787))
        #expect(m.gateways["gw-lab"]?.health?.broker == nil && m.gateways["gw-lab"]?.health?.failovers == nil)
    }

    /// A gateway's clock is learnt from its live readings (`ts` less arrival; a delay only lowers it, so the highest
    /// counts); a backlog replayed after an outage (old times, arriving now) does not pass for a slow clock, nor do
    /// retained messages; a beacon's time on the service's clock is its own `ts` less the offset when the gateway
    /// says its clock is not synchronised.
    @Test func aGatewaysClockOffsetComesFromLiveReadingsNotFromABacklogOrRetainedMessages() throws {
        var m = FleetModel(prefix: "demo")
        let t = 1795243048.062  // the payloads' ts (env)
        fold(&m, "demo/gw-lobby/status", Self.online, retained: true, now: t + 3600)
        #expect(m.gateways["gw-lobby"]?.clock.seconds == nil, "a retained message is as old as it is")
        // Live: the gateway's clock reads t when the service's reads t + 180 (and + 180.4: a slower delivery).
        fold(&m, "demo/gw-lobby/health", Self.health(2, ts: t, depth: 0, reports: 10), now: t + 180)
        fold(&m, Self.beaconTopic, Self.beacon(3), now: t + 180.4)
        let g = try #require(m.gateways["gw-lobby"])
        #expect(try #require(g.clock.seconds).rounded() == -180)
        #expect(
            g.problems.map(\.text).contains(
                "clock 180 s behind the fleet service's (not synchronised; presence places its readings by their arrival)"
            ))
        let b = try #require(g.beacons["ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4"])
        #expect(abs(b.serviceTs - (t + 180)) < 0.01, "ts less the offset (fallen by 0.4 s / 60)")
        // An outage: ten minutes later the spool replays readings made five minutes ago; the offset barely moves.
        fold(&m, "demo/gw-lobby/health", Self.health(4, ts: t + 300, depth: 9, reports: 20), now: t + 180 + 600)
        #expect(try #require(m.gateways["gw-lobby"]?.clock.seconds) > -191)
        // A new run starts the estimate again.
        let restarted = Self.health(5, ts: t, depth: 0, reports: 1).replacingOccurrences(
            of: Self.run, with: "00000000feedbeef")
        fold(&m, "demo/gw-lobby/health", restarted, now: t + 1)
        #expect(try #require(m.gateways["gw-lobby"]?.clock.seconds).rounded() == -1)
        #expect(m.gateways["gw-lobby"]?.problems.contains { $0.text.hasPrefix("clock") } == false)
    }

    @Test func theLastWillTurnsAGatewayOfflineSinceTheServiceSawIt() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online, retained: true, now: 1000)
        fold(&m, "demo/gw-lobby/status", Self.will, now: 1234.5)
        let g = m.gateways["gw-lobby"]
        #expect(g?.status == "offline")
        #expect(g?.statusReason == "connection lost")
        // Not the will's own ts, which is the time of the connection it belonged to.
        #expect(g?.since == 1234.5)
        #expect(g?.problems.first == .offline("connection lost"))
    }

    @Test func aRetainedOfflineStatusHasNoKnownSince() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.will, retained: true)
        #expect(m.gateways["gw-lobby"]?.status == "offline")
        #expect(m.gateways["gw-lobby"]?.since == nil)
    }

    @Test func problemsSortTheOverviewOfflineFirstThenAdapterThenHealthy() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/a-ok/status", Self.online)
        fold(&m, "demo/a-ok/adapter", Self.adapter(2, "poweredOn"))
        fold(&m, "demo/b-blocked/status", Self.online)
        fold(&m, "demo/b-blocked/adapter", Self.adapter(2, "blocked", reason: "rfkill soft block"))
        fold(&m, "demo/c-gone/status", Self.will)
        let rows = FleetViews.overview(m, broker: .init(url: "mqtt://x"), now: 0).gateways
        #expect(rows.map(\.id) == ["c-gone", "b-blocked", "a-ok"])
        #expect(rows[1].adapterReason == "rfkill soft block")
        #expect(rows[1].problems.first?.text == "adapter blocked: rfkill soft block")
    }

    @Test func aGrowingSpoolAndDropsAreProblems() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online)
        for i in 0..<4 {
            fold(
                &m, "demo/gw-lobby/health",
                Self.health(
                    2 + i, ts: 1000 + Double(i) * 5, depth: 100 * i, reports: 1000 * i, dropped: i == 3 ? 7 : 0),
                now: 1000.2 + Double(i) * 5)
        }
        let g = m.gateways["gw-lobby"]!
        #expect(g.spoolTrendPerMin == 1200)  // 300 readings in 15 s
        #expect(g.health?.reportsPerS == 200)
        #expect(g.problems.map(\.text) == ["spool growing (1200 readings/min)", "7 samples dropped"])
    }

    @Test func badPayloadsAndTopicsAreCountedNotFolded() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", "not json")
        fold(&m, "demo/gw-lobby/status", #"{\#(Self.env(1)),"state":"online"}"#)  // no version, gateway, started
        fold(&m, "demo/gw-lobby/health", #"{\#(Self.env(2)),"uptime_s":"five"}"#)
        fold(&m, "demo/gw-lobby/whatever", "{}")
        fold(&m, "demo/gw lobby<script>/status", Self.online)
        fold(&m, "elsewhere/gw-lobby/status", Self.online)
        fold(&m, "demo/fleet/config", #"{"version":3}"#)
        #expect(m.counters.invalidPayloads == 3)
        #expect(m.counters.unknownTopics == 1)
        #expect(m.counters.badGatewayIDs == 1)
        #expect(m.counters.messages == 6)  // the other prefix is not ours
        #expect(m.gateways["gw-lobby"]?.invalid == 3)
        #expect(m.gateways["gw-lobby"]?.status == "unknown")
        #expect(
            m.recentBadInput.map(\.reason) == [
                "not JSON", "missing field gateway", "wrong type at uptime_s", "not in the topic schema",
                "gateway id outside [A-Za-z0-9._-]",
            ])
    }

    /// An enrolment's steps (`…/enrol/state`) take seqs like every reading: they fill the stream, no gap and no bad
    /// input; the operator's command on `…/enrol` is not a gateway's.
    @Test func enrolmentStepsArePartOfTheStreamAndTheCommandIsNotAGateways() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online)
        fold(&m, "demo/gw-lobby/enrol", #"{"id":"e1","name":"alice"}"#)
        fold(&m, "demo/gw-lobby/enrol/state", #"{\#(Self.env(2)),"id":"e1","state":"refused","error":"x"}"#)
        fold(&m, "demo/gw-lobby/adapter", Self.adapter(3, "poweredOn"))
        #expect(m.counters.unknownTopics == 0)
        #expect(m.recentBadInput.isEmpty)
        #expect(m.gateways["gw-lobby"]?.seq.gaps == 0)
    }

    /// The gateway's start-up barrier (`…/config/sync`, no envelope) is neither bad input nor part of its stream.
    @Test func theStartUpSyncIsNoBadInputAndNoPartOfTheStream() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online)
        fold(&m, "demo/gw-lobby/config/sync", #"{"nonce":"9f2c01"}"#)
        fold(&m, "demo/gw-lobby/adapter", Self.adapter(2, "poweredOn"))
        #expect(m.counters.unknownTopics == 0)
        #expect(m.recentBadInput.isEmpty)
        #expect(m.gateways["gw-lobby"]?.seq.gaps == 0)
    }

    /// `…/sensors/<address>` (docs/TOPICS.md) is in the schema: its seq fills the stream, it is no bad input.
    @Test func sensorReadingsArePartOfTheStreamNotBadInput() {
        var m = FleetModel(prefix: "demo")
        fold(&m, "demo/gw-lobby/status", Self.online)
        fold(
            &m, "demo/gw-lobby/sensors/a4c138000002",
            #"{\#(Self.env(2)),"address":"A4:C1:38:00:00:02","format":"pvvx","model":"PVVX","rssi":-61,"values":{"temperature_c":21.5}}"#
        )
        fold(&m, "demo/gw-lobby/adapter", Self.adapter(3, "poweredOn"))
        #expect(m.counters.unknownTopics == 0)
        #expect(m.recentBadInput.isEmpty)
        #expect(m.gateways["gw-lobby"]?.seq.gaps == 0)
        // And the dashboard has its latest values.
        let s = m.gateways["gw-lobby"]?.sensors["a4c138000002"]
        #expect(s?.model == "PVVX" && s?.values == ["temperature_c": 21.5] && s?.rssi == -61)
        // A sensor payload without its values object is bad input naming the field.
        fold(
            &m, "demo/gw-lobby/sensors/a4c138000002",
            #"{\#(Self.env(4)),"address":"A4:C1:38:00:00:02","format":"pvvx","model":"PVVX","rssi":-61,"values":[1]}"#)
        #expect(m.recentBadInput.last?.reason == "wrong type at values")
    }

    @Test func peripheralsRegionsAndConfigStateAreFolded() {
        var m = FleetModel(prefix: "demo")
        fold(
            &m, "demo/gw/peripherals/001bdc100001/state",
            #"{\#(Self.env(88)),"address":"00:1B:DC:10:00:01","name":"sensor-lobby","state":"disconnected","since":1795245400.5,"attempts":2,"reason":"HCI 0x08 Connection Timeout","reason_code":8}"#
        )
        fold(
            &m, "demo/gw/peripherals/001bdc100001/rssi", #"{\#(Self.env(89)),"address":"00:1B:DC:10:00:01","rssi":-67}"#
        )
        fold(
            &m, "demo/gw/regions/lobby",
            #"{\#(Self.env(90)),"region":"lobby","state":"inside","since":1795245300.120,"event":"enter","beacons":["b-1"]}"#
        )
        fold(
            &m, "demo/gw/config/state",
            #"{\#(Self.env(91)),"status":"rejected","hash":"sha256:\#(String(repeating: "ab", count: 32))","version":4,"errors":[{"path":"scan.window_ms","reason":"above the interval"}],"warnings":[]}"#
        )
        let g = m.gateways["gw"]!
        #expect(
            g.peripherals["001bdc100001"]
                == FleetGateway.Peripheral(
                    name: "sensor-lobby", state: "disconnected", since: 1795245400.5, attempts: 2,
                    reason: "HCI 0x08 Connection Timeout", reasonCode: 8, rssi: -67))
        #expect(g.regions["lobby"]?.state == "inside")
        #expect(g.config?.errors == ["scan.window_ms: above the interval"])
        #expect(g.problems.contains(.configRejected(["scan.window_ms: above the interval"])))
        // A region removed by remote configuration leaves the model.
        fold(
            &m, "demo/gw/regions/lobby",
            #"{\#(Self.env(92)),"region":"lobby","state":"removed","since":1795245300.120,"event":"removed"}"#)
        #expect(m.gateways["gw"]?.regions.isEmpty == true)
    }

    @Test func beaconPageListsEveryGatewayThatHearsTheBeacon() {
        var m = FleetModel(prefix: "demo")
        fold(&m, Self.beaconTopic, Self.beacon(5))
        fold(&m, "demo/gw-lab/beacons/ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4", Self.beacon(9))
        let page = FleetViews.beacon(
            m, id: "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4",
            broker: .init(url: "mqtt://x"), now: 0)
        #expect(page.heardBy.map(\.gateway) == ["gw-lab", "gw-lobby"])
        m.forgetBeacons(olderThan: 60, now: 1795243048.5 + 61)
        #expect(m.gateways.values.allSatisfy { $0.beacons.isEmpty })
    }

    /// Several sites in one model: each gateway keeps its site; an id already used by another site's gateway is bad
    /// input, never merged into it, and clearing its retained topics does not clear the first gateway's.
    @Test func aGatewayIDFromASecondSiteIsAConflictNotAMerge() {
        var m = FleetModel(sites: ["acme/a", "acme/b"])
        fold(&m, "acme/a/gw-1/status", Self.online)
        fold(&m, "acme/b/gw-2/status", Self.online)
        fold(&m, "acme/b/gw-1/status", Self.online)
        m.receive(topic: "acme/b/gw-1/status", payload: [], retained: true, now: 2)
        #expect(m.gateways["gw-1"]?.site == "acme/a")
        #expect(m.gateways["gw-1"]?.status == "online")
        #expect(m.gateways["gw-2"]?.site == "acme/b")
        #expect(m.counters.siteConflicts == 1)
        #expect(m.recentBadInput.last?.reason == "gateway id gw-1 is already a gateway of site acme/a/")
        fold(&m, "acme/c/gw-3/status", Self.online)
        #expect(m.gateways["gw-3"] == nil, "a site not followed is not folded")
    }

    @Test(arguments: [
        (["a", "a/b"], "site \"a/b\" is inside site \"a\""), (["a", "a"], "a site is listed twice"),
        (["a/+"], "\"a/+\" is not a topic prefix (levels separated by '/', no wildcards)"),
        (["a/"], "\"a/\" is not a topic prefix (levels separated by '/', no wildcards)"),
        ([], "give at least one site"),
    ])
    func sitesThatWouldShareTopicsAreRefused(sites: [String], problem: String) {
        #expect(FleetConfiguration.problem(sites: sites) == problem)
        #expect(FleetConfiguration.problem(sites: ["acme/a", "acme/ab", "b"]) == nil)
    }
}
