import Foundation
import Testing

@testable import BLEFleet

@Suite struct FleetHistoryTests {
    func model(now: Double, rssi: Double = -70) -> FleetModel {
        var m = FleetModel(prefix: "demo")
        let env = #""run":"r","seq":1,"ts":5,"clock_synced":true"#
        m.receive(
            topic: "demo/gw/status",
            payload: Array(
                #"{\#(env),"state":"online","gateway":"gw","version":"0.1.0","started":1}"#.utf8), retained: true,
            now: now)
        m.receive(
            topic: "demo/gw/health",
            payload: Array(
                #"{\#(env),"uptime_s":5,"spool":{"depth":4,"dropped_samples":0},"publish":{"acknowledged":1,"rate_per_s":2.5,"connected":true},"scan":{"reports":10},"memory":{"rss_bytes":1000000}}"#
                    .utf8),
            retained: false, now: now)
        m.receive(
            topic: "demo/gw/beacons/b-1",
            payload: Array(
                #"{\#(env),"id":"b-1","kind":"other","address":"C4:BB:CA:D0:7F:7D","rssi":\#(rssi),"samples":3,"interval_s":1,"distance_m":2.5}"#
                    .utf8),
            retained: false, now: now)
        m.receive(
            topic: "demo/gw/sensors/a4c138000002",
            payload: Array(
                #"{\#(env),"address":"A4:C1:38:00:00:02","format":"pvvx","model":"PVVX","rssi":-61,"encrypted":false,"values":{"temperature_c":21.5,"humidity_pct":40}}"#
                    .utf8),
            retained: false, now: now)
        return m
    }

    @Test func pointsSurviveReopeningTheFileAndAreBucketedToTenSeconds() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-history-\(UUID()).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        do {
            let h = try FleetHistory(path: path)
            try h.record(model(now: 1_000_003), now: 1_000_003)
            try h.record(model(now: 1_000_017), now: 1_000_017)
        }
        let reopened = try FleetHistory(path: path)
        let health = try reopened.health(gateway: "gw", since: 0)
        #expect(health.map(\.t) == [1_000_000, 1_000_010])
        #expect(health.first?.messagesPerS == 2.5)
        #expect(health.first?.spoolDepth == 4)
        let ranging = try reopened.ranging(beacon: "b-1", since: 0)
        #expect(ranging["gw"]?.map(\.rssi) == [-70, -70])
        #expect(ranging["gw"]?.first?.distanceM == 2.5)
        let sensor = try reopened.sensor("a4c138000002", since: 0)
        #expect(sensor["temperature_c"]?["gw"]?.map(\.value) == [21.5, 21.5])
        #expect(sensor["humidity_pct"]?["gw"]?.map(\.t) == [1_000_000, 1_000_010])
    }

    @Test func minutesOlderThanTheRetentionArePruned() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-history-\(UUID()).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        let h = try FleetHistory(path: path, retentionS: 2 * 3600)
        try h.record(model(now: 1_000_000), now: 1_000_000)
        let later = 1_000_000.0 + 2 * 3600 + 60
        try h.record(model(now: later), now: later)
        #expect(try h.health(gateway: "gw", since: 0).map(\.t) == [Double(FleetHistory.bucket(later))])
        #expect(try h.ranging(beacon: "b-1", since: 0)["gw"]?.count == 1)
    }

    /// The last hour is kept as recorded; each older minute becomes one point with the mean, least and greatest of
    /// its points (each series, every table), once, and reads back before the points as recorded.
    @Test func pointsOlderThanAnHourAreFoldedIntoMinutesWithTheirLeastMeanAndGreatest() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-history-\(UUID()).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        let h = try FleetHistory(path: path)
        let start = 1_000_020.0  // a minute's start
        // Six points in the first minute with RSSI −70…−60 and distance 2.5.
        for i in 0..<6 {
            let t = start + Double(i) * 10
            try h.record(model(now: t, rssi: -70 + Double(i) * 2), now: t)
        }
        // An hour and a half later: that minute has left the full-resolution hour.
        let later = start + 5400
        try h.record(model(now: later), now: later)
        let ranging = try #require(try h.ranging(beacon: "b-1", since: 0)["gw"])
        #expect(ranging.map(\.t) == [start, later])
        #expect(ranging[0].spanS == 60 && ranging[1].spanS == 10)
        #expect(ranging[0].rssi == -65 && ranging[0].min?.rssi == -70 && ranging[0].max?.rssi == -60)
        #expect(ranging[0].distanceM == 2.5 && ranging[1].min == nil)
        let health = try h.health(gateway: "gw", since: 0)
        #expect(health.map(\.spanS) == [60, 10])
        #expect(health[0].messagesPerS == 2.5 && health[0].max?.spoolDepth == 4)
        let sensor = try #require(try h.sensor("a4c138000002", since: 0)["temperature_c"]?["gw"])
        #expect(sensor.map(\.t) == [start, later] && sensor[0].min == 21.5 && sensor[0].max == 21.5)
        // Recording again does not fold the minute twice.
        try h.record(model(now: later + 10), now: later + 10)
        #expect(try h.ranging(beacon: "b-1", since: 0)["gw"]?.first?.rssi == -65)
        #expect(try h.ranging(beacon: "b-1", since: 0)["gw"]?.count == 3)
    }
}
