import BLEHCI
import BLETransport
import Testing

@testable import BLEConfiguration
@testable import BLEDomain
@testable import BLEGateway

/// The pipeline alone, in literal values: sightings in at given times, what they make out. No runtime, broker,
/// spool or clock.
@Suite struct SightingPipelineTests {
    typealias E = SightingExplainerTests

    static func sighting(_ ad: [UInt8], rssi: Int8 = -60) -> Sighting { E.sighting(ad, rssi: rssi) }

    /// What the pipeline made of `s`, its sensor reading left out.
    static func observe(_ p: inout SightingPipeline, _ s: Sighting, at now: Duration) -> SightingPipeline.Outcome {
        var sensor: SensorReading?
        return p.observe(s, at: now, sensor: &sensor)
    }

    /// What the pipeline made of `s` for the sensor topic (nil: not a sensor frame, or one the gate stopped).
    static func sensorReading(_ p: inout SightingPipeline, _ s: Sighting, at now: Duration) -> SensorReading? {
        var sensor: SensorReading?
        _ = p.observe(s, at: now, sensor: &sensor)
        return sensor
    }

    /// BTHome v2, unencrypted: packet id `packet`, temperature 25.00 °C.
    static func sensor(packet: UInt8) -> Sighting {
        sighting([0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, packet, 0x02, 0xC4, 0x09])
    }

    @Test func aSightingTheFilterStopsMakesNothingAndIsNotRanged() throws {
        var c = GatewayConfiguration()
        c.scan.filters = ["rssi:-70"]
        c.publishing.rawAdvertisements = true
        var p = try SightingPipeline(c, at: .zero)
        var sensor: SensorReading?
        let out = p.observe(Self.sighting(E.iBeacon, rssi: -80), at: .seconds(1), sensor: &sensor)
        #expect(out.regionEvents.isEmpty && !out.raw && sensor == nil)
        #expect(p.ranging.trackedCount == 0)
        #expect(Self.observe(&p, Self.sighting(E.iBeacon, rssi: -60), at: .seconds(1)).raw)
        #expect(p.ranging.trackedCount == 1)
    }

    @Test func aBeaconIsOneSummaryPerIntervalNotOneReadingPerSighting() throws {
        var c = GatewayConfiguration()
        c.publishing.rangingIntervalSeconds = 1
        var p = try SightingPipeline(c, at: .zero)
        #expect(p.tick(at: .zero, scanning: true).updates.isEmpty, "the first tick starts the intervals")
        for k in 0..<5 { _ = Self.observe(&p, Self.sighting(E.iBeacon, rssi: -60), at: .milliseconds(100 * k)) }
        #expect(p.tick(at: .milliseconds(500), scanning: true).updates.isEmpty, "within the interval")
        let end = p.tick(at: .seconds(1), scanning: true)
        #expect(end.updates.count == 1)
        let u = try #require(end.updates.first)
        #expect(u.samples == 5)
        #expect(u.address == E.address)
        #expect(u.identity.id == "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2")
    }

    @Test func theRawStreamTakesAtMostItsRateWithABurstOfOneSecondsWorth() throws {
        var c = GatewayConfiguration()
        c.publishing.rawAdvertisements = true
        c.publishing.rawMaxPerSecond = 2
        var p = try SightingPipeline(c, at: .zero)
        let at: [Duration] = [.seconds(10), .seconds(10), .seconds(10), .milliseconds(10_400), .milliseconds(10_500)]
        let raw = at.map { Self.observe(&p, Self.sighting(E.named), at: $0).raw }
        #expect(raw == [true, true, false, false, true])
        #expect(p.raw.limited == 2)
    }

    @Test func aSensorPacketIsOneReadingItsRepeatsNone() throws {
        var c = GatewayConfiguration()
        c.sensors.minIntervalSeconds = 0
        var p = try SightingPipeline(c, at: .zero)
        let first = try #require(Self.sensorReading(&p, Self.sensor(packet: 7), at: .seconds(1)))
        #expect(first.value(of: .temperature) == 25)
        #expect(first.counter == 7)
        #expect(Self.sensorReading(&p, Self.sensor(packet: 7), at: .seconds(2)) == nil)
        #expect(Self.sensorReading(&p, Self.sensor(packet: 8), at: .seconds(3))?.counter == 8)
        #expect(p.sensorGate.statistics.repeats == 1)
        c.sensors.enabled = false
        var off = try SightingPipeline(c, at: .zero)
        #expect(Self.sensorReading(&off, Self.sensor(packet: 9), at: .seconds(1)) == nil)
    }

    /// The region monitor's events become state changes: a `determined` with the enter or exit right after it for the
    /// same region; a lone `determined` stays one.
    @Test func regionEventsBecomeDeterminedEnterAndExitChanges() throws {
        let id = BeaconIdentity.address(E.address)
        let events = [
            RegionEvent(region: "desk", kind: .determined(.inside), time: .seconds(1), identity: id),
            RegionEvent(region: "desk", kind: .entered, time: .seconds(1), identity: id),
            RegionEvent(region: "hall", kind: .determined(.outside), time: .seconds(1), identity: nil),
            RegionEvent(region: "door", kind: .determined(.outside), time: .seconds(1), identity: nil),
            RegionEvent(region: "door", kind: .exited, time: .seconds(1), identity: nil),
        ]
        let changes = SightingPipeline.regionChanges(events)
        #expect(changes.map(\.event.region) == ["desk", "hall", "door"])
        #expect(changes.map(\.state) == [.inside, .outside, .outside])
        #expect(changes.map(\.change) == [.enter, .determined, .exit])
    }

    @Test func aRegionIsEnteredByASightingAndDeterminedAfreshWhenTheAdapterScansAgain() throws {
        var c = GatewayConfiguration()
        c.regions = [Region(id: "desk", matcher: .address(E.address))]
        var p = try SightingPipeline(c, at: .zero)
        let entered = Self.observe(&p, Self.sighting(E.named), at: .seconds(1)).regionEvents
        #expect(entered.map(\.kind) == [.determined(.inside)])
        #expect(p.tick(at: .seconds(60), scanning: false).regionEvents.isEmpty, "an outage is not an exit")
        #expect(p.adapterScanning(at: .seconds(61)).map(\.kind) == [.determined(.unknown)])
    }

    /// Issue #42, "idle is idle": with nothing an interval's end could change (no beacon, every region outside) the
    /// ticker may rest; the sighting that brings a beacon ends the rest, once; a forgotten beacon and an exited region
    /// let it rest again; the adapter scanning again (regions determined afresh) ends it too.
    @Test func theTickerRestsUntilAnEventGivesAnIntervalSomethingToEnd() throws {
        var c = GatewayConfiguration()
        c.publishing.rangingIntervalSeconds = 1
        c.regions = [Region(id: "desk", matcher: .address(E.address))]
        var p = try SightingPipeline(c, at: .zero)
        var granted = p.rest()
        #expect(!granted, "a region not yet determined is timed")
        let timeout = c.regions[0].exitTimeout
        let determined = p.tick(at: timeout, scanning: true).regionEvents
        #expect(determined.map(\.kind) == [.determined(.outside)])
        granted = p.rest()
        #expect(granted, "no beacon, the region outside")
        var ended = p.restEnded()
        #expect(!ended, "nothing happened")

        _ = Self.observe(&p, Self.sighting(E.iBeacon, rssi: -60), at: timeout + .seconds(1))
        ended = p.restEnded()
        #expect(ended, "a beacon to summarise, a region inside")
        ended = p.restEnded()
        #expect(!ended, "ended once")
        granted = p.rest()
        #expect(!granted)

        // Long unheard: the beacon forgotten, the region exited.
        _ = p.tick(at: timeout + .seconds(1000), scanning: true)
        #expect(p.ranging.trackedCount == 0)
        granted = p.rest()
        #expect(granted)
        let afresh = p.adapterScanning(at: timeout + .seconds(1001))
        #expect(afresh.map(\.kind) == [.determined(.unknown)])
        ended = p.restEnded()
        #expect(ended, "a region to determine afresh")
    }

    /// One setting, file → snapshot → engine: a new `ranging.rssi_offset_db` builds the ranging engine again (its
    /// beacons tracked afresh); a change elsewhere keeps it and its beacons; the filter is replaced either way (one
    /// that does not parse keeps the one in force). A filter that does not parse at start is the file's error.
    @Test func aNewConfigurationRebuildsOnlyTheEnginesWhoseSettingsChanged() throws {
        var before = GatewayConfiguration()
        before.publishing.rawAdvertisements = true
        var p = try SightingPipeline(before, at: .zero)
        _ = Self.observe(&p, Self.sighting(E.iBeacon), at: .seconds(1))
        var filtered = before
        filtered.scan.filters = ["rssi:-50"]
        p.reconfigure(from: before, to: filtered, at: .seconds(2))
        #expect(p.ranging.trackedCount == 1)
        #expect(!Self.observe(&p, Self.sighting(E.iBeacon, rssi: -60), at: .seconds(2)).raw, "the new filter stops it")
        #expect(Self.observe(&p, Self.sighting(E.iBeacon, rssi: -40), at: .seconds(2)).raw)
        // A filter that does not parse keeps the one in force.
        var broken = filtered
        broken.scan.filters = ["rssi:loud"]
        p.reconfigure(from: filtered, to: broken, at: .seconds(2))
        #expect(!p.settings.filter.matches(Self.sighting(E.iBeacon, rssi: -60)))
        var offset = broken
        offset.ranging.rssiOffsetDB = 4
        p.reconfigure(from: broken, to: offset, at: .seconds(3))
        #expect(p.ranging.trackedCount == 0)
        #expect(p.ranging.configuration.rssiOffsetDB == 4)
        var bad = GatewayConfiguration()
        bad.scan.filters = ["rssi:loud"]
        #expect(throws: (any Error).self) { try SightingPipeline(bad, at: .zero) }
    }
}
