import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// Scanning end to end: literal scan commands over the socket, advertising reports back, checked
/// against the scenario's channel model (counts against the loss model, mean RSSI against the
/// path-loss model). Virtual time is a `ManualClock`, so the tests take milliseconds.
@Suite struct ScanningTests {
    static func scenario(loss: Double, sigma: Double, beacons: [(minor: Int, x: Double)], interval: Int = 100) -> String
    {
        var y = """
            name: scan-test
            radio: {path_loss_exponent: 2.5, shadowing_sigma_db: \(sigma), loss_probability: \(loss), sensitivity_dbm: -120}
            gateways:
              - {id: gw-a, position: [0, 0, 0]}
            beacons:

            """
        for b in beacons {
            y += "  - {name: b\(b.minor), type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, "
            y += "minor: \(b.minor), measured_power: -59, interval_ms: \(interval), position: [\(b.x), 0, 0]}\n"
        }
        return y
    }

    /// Decodes every advertising report (legacy or extended) with BLEHCI's parser, which is an
    /// independent reading of the same layouts.
    static func reports(_ packets: [H4Packet]) -> [LEAdvertisingReport] {
        var out: [LEAdvertisingReport] = []
        for p in packets where p.type == .event && p.payload[0] == 0x3E {
            let params = p.payload[3...]
            switch p.payload[2] {
            case 0x02: #expect(LEAdvertisingReport.parseLegacy(params) { out.append($0) } == 1)
            case 0x0D: #expect(LEAdvertisingReport.parseExtended(params) { out.append($0) } == 1)
            default: break
            }
        }
        return out
    }

    /// Expected advertising events in `seconds`: advInterval plus a mean advDelay of 5 ms.
    static func expectedEvents(seconds: Double, intervalMs: Double) -> Double { seconds / (intervalMs / 1000 + 0.005) }

    @Test func legacyPassiveScanReportCountFollowsTheLossModel() async throws {
        let h = try SimHarness(Self.scenario(loss: 0.2, sigma: 2, beacons: [(1, 2)]))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // Scan interval = window = 10 ms: continuous listening.
        #expect(try c.command(Bytes.leSetScanParameters(active: false, interval: 16, window: 16)).last == 0)
        #expect(try c.command(Bytes.leSetScanEnable(true)).last == 0)
        await h.advance(seconds: 100)
        var packets: [H4Packet] = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        let reports = Self.reports(packets)
        let n = Self.expectedEvents(seconds: 100, intervalMs: 100)
        let mean = 0.8 * n
        let sd = (n * 0.8 * 0.2).squareRoot()
        #expect(abs(Double(reports.count) - mean) < 5 * sd, "got \(reports.count), expected \(mean) ± \(5 * sd)")
        // Every report is the iBeacon's ADV_NONCONN_IND with its 30 octets of data.
        #expect(reports.allSatisfy { !$0.isExtended && $0.eventType == 3 && $0.data.count == 30 })
    }

    @Test func aHalfOpenScanWindowHearsAboutHalfTheAdvertisements() async throws {
        let h = try SimHarness(Self.scenario(loss: 0, sigma: 0, beacons: [(1, 2)], interval: 100))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // Interval 100 ms (160 × 0.625), window 50 ms (80).
        try c.command(Bytes.leSetScanParameters(active: false, interval: 160, window: 80))
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 100)
        var packets: [H4Packet] = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        let got = Double(Self.reports(packets).count)
        let n = Self.expectedEvents(seconds: 100, intervalMs: 100)
        #expect(got > 0.4 * n && got < 0.6 * n, "got \(got) of \(n) advertisements with a 50% window")
    }

    @Test func meanRSSIFollowsThePathLossModelAtSeveralDistances() async throws {
        let distances: [Double] = [1, 3, 10]
        let beacons = distances.enumerated().map { (minor: $0.offset + 1, x: $0.element) }
        let h = try SimHarness(Self.scenario(loss: 0.1, sigma: 4, beacons: beacons))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // Extended scanning this time, so extended reports are decoded too.
        #expect(try c.command(Bytes.leSetExtendedScanParameters(active: false, interval: 16, window: 16)).last == 0)
        #expect(try c.command(Bytes.leSetExtendedScanEnable(true)).last == 0)
        await h.advance(seconds: 60)
        var packets: [H4Packet] = []
        try c.command(Bytes.leSetExtendedScanEnable(false), before: &packets)
        let reports = Self.reports(packets)
        #expect(reports.allSatisfy { $0.isExtended && $0.eventType == 0x0010 })
        let addresses = h.simulator.scenario.emitters.map(\.address)
        for (i, d) in distances.enumerated() {
            let rssi = reports.filter { $0.address == addresses[i] }.compactMap { $0.rssi.map(Double.init) }
            #expect(rssi.count > 400)
            let mean = rssi.reduce(0, +) / Double(max(rssi.count, 1))
            let model = -59 - 25 * log10(d)
            // σ = 4 dB over > 400 samples: the mean's standard error is < 0.2 dB.
            #expect(abs(mean - model) < 1.0, "at \(d) m: mean \(mean) dBm, model \(model) dBm")
        }
    }

    @Test func activeScanningAddsScanResponsesAndDuplicateFilteringReportsEachOnce() async throws {
        let yaml = """
            name: active
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-a, position: [0, 0]}]
            peripherals:
              - {name: sensor-1, local_name: Thermo-1, service_uuids: ["181A"], position: [2, 0], interval_ms: 200}
            """
        let h = try SimHarness(yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(Bytes.leSetScanParameters(active: true, interval: 16, window: 16))
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 10)
        var packets: [H4Packet] = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        let all = Self.reports(packets)
        let adv = all.filter { !$0.isScanResponse }
        let rsp = all.filter { $0.isScanResponse }
        #expect(adv.count > 40 && adv.count == rsp.count)
        #expect(adv.allSatisfy { $0.eventType == 0 && $0.isConnectable })
        // The scan response carries the Complete Local Name AD (0x09) "sensor-1".
        #expect(rsp.first.map { Array($0.data) } == [0x09, 0x09] + Array("sensor-1".utf8))

        try c.command(Bytes.leSetScanEnable(true, filterDuplicates: true))
        await h.advance(seconds: 10)
        packets = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        let filtered = Self.reports(packets)
        #expect(filtered.filter { !$0.isScanResponse }.count == 1)
        #expect(filtered.filter { $0.isScanResponse }.count == 1)
    }

    @Test func withoutTheLEMetaEventMaskBitNoReportsReachTheHost() async throws {
        let h = try SimHarness(Self.scenario(loss: 0, sigma: 0, beacons: [(1, 2)]))
        let c = try h.client("gw-a")
        try h.bringUp(c, leMeta: false)
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 5)
        var packets: [H4Packet] = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        #expect(Self.reports(packets).isEmpty)
        #expect(h.simulator.nodes[0].stats.reportsMasked > 0)
    }

    @Test func theSameSeedGivesTheSameAir() async throws {
        func run(seed: UInt64) async throws -> [[UInt8]] {
            let h = try SimHarness(Self.scenario(loss: 0.3, sigma: 5, beacons: [(1, 2), (2, 5)]), seed: seed)
            let c = try h.client("gw-a")
            try h.bringUp(c)
            try c.command(Bytes.leSetScanEnable(true))
            await h.advance(seconds: 5)
            var packets: [H4Packet] = []
            try c.command(Bytes.leSetScanEnable(false), before: &packets)
            return packets.map(\.payload)
        }
        let a = try await run(seed: 42)
        let b = try await run(seed: 42)
        let other = try await run(seed: 43)
        #expect(!a.isEmpty && a == b)
        #expect(a != other)
    }

    @Test func anExtendedScanWithADurationEndsWithLEScanTimeout() async throws {
        let h = try SimHarness(Self.scenario(loss: 0, sigma: 0, beacons: [(1, 2)]))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // LE event mask: 0x01–0x05, 0x0D, and 0x11 LE Scan Timeout (bit 16).
        try c.command([0x01, 0x01, 0x20, 0x08, 0x1F, 0x10, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        try c.command(Bytes.leSetExtendedScanParameters(active: false, interval: 16, window: 16))
        // Duration 100 × 10 ms = 1 s, no period.
        #expect(try c.command([0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00]).last == 0x00)
        await h.advance(seconds: 3, step: .milliseconds(250))
        var reports: [H4Packet] = []
        while true {
            let p = try c.receive()
            if p.h4Bytes == [0x04, 0x3E, 0x01, 0x11] { break }
            reports.append(p)
        }
        // About ten advertisements in the one second of scanning, none after.
        let n = Self.reports(reports).count
        #expect(n >= 7 && n <= 11, "\(n) reports in a 1 s scan")
        var after: [H4Packet] = []
        try c.command(Bytes.readBDAddr, before: &after)
        #expect(Self.reports(after).isEmpty)
    }
}
