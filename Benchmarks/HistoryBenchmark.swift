import BLEFleet
import Foundation

/// `blegateway-bench history [-- --gateways 20 --beacons 50 --sensors 5 --hours 24]`: the fleet service's history file
/// over a simulated stretch of time, recorded as the service records it (FleetHistory: a point every 10 s, the last
/// hour kept whole, older minutes folded into least/mean/greatest). Every gateway is online with its health, reports
/// `beacons` beacons and `sensors` sensors (two quantities each) every 10 s. The file is measured on disk after a WAL
/// checkpoint and given per gateway-day; the service's own model and clock are used, only time is simulated (a day
/// takes minutes here, not a day). Prints also the time one record of the whole fleet took at the end (the service
/// records every 10 s, so it must stay well under that).
func runHistoryBenchmark(arguments: [String]) async {
    let gateways = benchmarkOption(arguments, "--gateways", 20)
    let beacons = benchmarkOption(arguments, "--beacons", 50)
    let sensors = benchmarkOption(arguments, "--sensors", 5)
    let hours = benchmarkOption(arguments, "--hours", 24.0)
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("history-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("history.sqlite").path
    do {
        let history = try FleetHistory(path: path, retentionS: max(hours * 3600, FleetHistory.fullResolutionS))
        var model = FleetModel(prefix: "bench")
        let start = 1_800_000_000.0
        let steps = Int(hours * 3600 / FleetHistory.resolution)
        func env(_ seq: Int, _ ts: Double) -> String { #""run":"r","seq":\#(seq),"ts":\#(ts),"clock_synced":true"# }
        for g in 0..<gateways {
            _ = model.receive(
                topic: "bench/gw-\(g)/status",
                payload: Array(
                    #"{\#(env(0, start)),"state":"online","gateway":"gw-\#(g)","version":"0.1.0","started":1}"#.utf8),
                retained: true, now: start)
        }
        var lastRecord = Duration.zero
        var recordTotal = Duration.zero
        let clock = ContinuousClock()
        for step in 0..<steps {
            let now = start + Double(step) * FleetHistory.resolution
            // Values that move, so each minute's least, mean and greatest differ as real ones do.
            let wobble = Double(step % 7)
            for g in 0..<gateways {
                _ = model.receive(
                    topic: "bench/gw-\(g)/health",
                    payload: Array(
                        #"{\#(env(step, now)),"uptime_s":\#(step * 10),"spool":{"depth":\#(step % 13),"dropped_samples":0},"publish":{"acknowledged":\#(step),"rate_per_s":\#(50 + wobble),"connected":true},"scan":{"reports":\#(step * 500)},"memory":{"rss_bytes":\#(30_000_000 + step % 100 * 1000)}}"#
                            .utf8), retained: false, now: now)
                for b in 0..<beacons {
                    _ = model.receive(
                        topic: "bench/gw-\(g)/beacons/b-\(b)",
                        payload: Array(
                            #"{\#(env(step, now)),"id":"b-\#(b)","kind":"other","address":"C4:BB:CA:D0:7F:7D","rssi":\#(-60 - wobble - Double(b % 20)),"samples":3,"interval_s":1,"distance_m":\#(1.5 + wobble / 10)}"#
                                .utf8), retained: false, now: now)
                }
                for s in 0..<sensors {
                    _ = model.receive(
                        topic: "bench/gw-\(g)/sensors/a4c1380000\(String(format: "%02x", s))",
                        payload: Array(
                            #"{\#(env(step, now)),"address":"A4:C1:38:00:00:\#(String(format: "%02X", s))","format":"pvvx","model":"PVVX","rssi":-61,"encrypted":false,"values":{"temperature_c":\#(21 + wobble / 10),"humidity_pct":\#(40 + wobble)}}"#
                                .utf8), retained: false, now: now)
                }
            }
            let t0 = clock.now
            try history.record(model, now: now)
            lastRecord = clock.now - t0
            recordTotal += lastRecord
        }
        let size = history.checkpointedSize()
        let gatewayDays = Double(gateways) * hours / 24
        print(
            "history: \(gateways) gateways × \(beacons) beacons + \(sensors) sensors, \(hours) h simulated "
                + "(\(steps) records; last hour whole, older minutes folded)")
        print(
            String(
                format: "  file after checkpoint: %.1f MB = %.0f kB per gateway-day", size / 1e6,
                size / 1e3 / gatewayDays))
        func ms(_ d: Duration) -> String {
            String(format: "%.1f ms", Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15)
        }
        print(
            "  one record of the whole fleet: \(ms(lastRecord)) at the end, \(ms(recordTotal / max(steps, 1))) on "
                + "average (the service records every 10 s)")
    } catch {
        print("history benchmark failed: \(error)")
    }
}
