import BLEDomain
import BLEHCI
import BLEPublishing
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// A beacon summary carries what an honest ranging figure needs — the raw readings' mean and variance and the filter
/// with its parameters — and the Eddystone-TLM telemetry heard from the beacon, and matches schema/v1/beacon.json,
/// which allows nothing else.
@Suite struct BeaconSummaryTests {
    static let uuid = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
    static let address = BDAddress(rawValue: 0xC000_0000_0001)

    @Test func theRawMeanAndSampleVarianceAreTheIntervalsReadingsAlone() throws {
        var r = RangingEngine()
        _ = r.tick(at: .zero)
        let id = BeaconIdentity.iBeacon(uuid: Self.uuid, major: 1, minor: 1)
        for (n, rssi) in [Int8(-60), -64, nil, -62, -70].enumerated() {
            r.observe(id, address: Self.address, rssi: rssi, frameCalibration: -59, at: .milliseconds(100 * (n + 1)))
        }
        let first = try #require(r.tick(at: .seconds(1)).first)
        // -60, -64, -62, -70 (the reading without an RSSI is a sample, not a number): mean -64, variance 56/3.
        #expect(first.samples == 5 && first.rawRSSIMean == -64)
        #expect(abs((first.rawRSSIVariance ?? 0) - 56.0 / 3) < 1e-9)
        r.observe(id, address: Self.address, rssi: -61, frameCalibration: -59, at: .milliseconds(1500))
        let second = try #require(r.tick(at: .seconds(2)).first)
        #expect(second.rawRSSIMean == -61 && second.rawRSSIVariance == nil)  // one reading has no spread
    }

    @Test func aSummaryWithTelemetryAndTheFilterMatchesTheSchema() throws {
        let readings = GatewayReadings(
            topics: try Topics(prefix: "bg", gatewayID: "gw"), run: "0123abcd",
            version: "test", started: 0, sampleQoS: 1, sampleExpiry: nil)
        var ranging = GatewayConfiguration.Ranging()
        ranging.pathLossExponent = 2.2
        let filter = GatewayReadings.filterDescription(ranging)
        var engine = RangingEngine()
        _ = engine.tick(at: .zero)
        let id = BeaconIdentity(beacon: nil, address: Self.address)
        engine.observe(id, address: Self.address, rssi: -66, frameCalibration: nil, at: .milliseconds(100))
        engine.observe(id, address: Self.address, rssi: -68, frameCalibration: nil, at: .milliseconds(200))
        let u = try #require(engine.tick(at: .seconds(1)).first)
        let tlm = EddystoneTLM.Plain(
            batteryMillivolts: 2950, temperatureRaw: Int16(22.5 * 256), advertisingCount: 1234,
            uptimeDeciseconds: 36_005)
        let unsupported = EddystoneTLM.Plain(
            batteryMillivolts: 0, temperatureRaw: Int16(bitPattern: 0x8000),
            advertisingCount: 1, uptimeDeciseconds: 1)
        var payloads: [(topic: String, payload: String)] = []
        for (n, t) in [tlm, unsupported, nil].enumerated() {
            let reading = readings.beacon(u, interval: 1, filter: filter, telemetry: t, ts: 1_700_000_000, synced: true)
            let full = PayloadEnvelope.render(
                run: "0123abcd", seq: UInt64(n + 1), ts: 1_700_000_000, clockSynced: true,
                body: reading.body)
            payloads.append((reading.topic, String(decoding: full, as: UTF8.self)))
        }
        let first = Data(payloads[0].payload.utf8)
        let json = try #require(try JSONSerialization.jsonObject(with: first) as? [String: Any])
        #expect(json["rssi_raw_mean"] as? Double == -67 && json["rssi_variance"] as? Double == 2)
        let f = try #require(json["filter"] as? [String: Any])
        #expect(f["name"] as? String == "adaptive-ekf-distance" && f["path_loss_exponent"] as? Double == 2.2)
        #expect(f["filter_sigma_db"] as? Double == ranging.filterSigmaDB)
        let t = try #require(json["tlm"] as? [String: Any])
        #expect(t["battery_v"] as? Double == 2.95 && t["temperature_c"] as? Double == 22.5)
        #expect(t["adv_count"] as? Int == 1234 && t["uptime_s"] as? Double == 3600.5)
        #expect(payloads[1].payload.contains(#""tlm":{"battery_v":null,"temperature_c":null"#))
        #expect(!payloads[2].payload.contains("tlm"))
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("beacon-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let problems = try SchemaValidation.problems(payloads, prefix: "bg", directory: dir)
        #expect(problems == nil, "\(problems ?? "")")
    }
}
