import BLEDomain
import BLEHCI
import BLETransport
import Foundation

/// Ranging and regions: the accuracy table against the simulator's ground truth (an hour of
/// virtual time by default), then the cost of one reading and the memory of one tracked beacon.
///
/// Arguments: `--seconds S` of virtual time to score (default 3600), `--seed N` (default 1),
/// `--beacons N` tracked during the cost measurement (default 5000).
func runRangingBenchmark(arguments: [String]) async {
    func value(_ name: String, _ fallback: Double) -> Double { benchmarkOption(arguments, name, fallback) }
    var setup = RangingScoreSetup()
    setup.seconds = value("--seconds", 3600)
    setup.seed = UInt64(value("--seed", 1))
    let started = ContinuousClock.now
    do {
        let score = try await scoreRanging(setup)
        print(
            "ranging: scored \(Int(setup.seconds)) s of virtual time, seed \(setup.seed), "
                + "in \(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s")
        print(score.table())
    } catch {
        print("ranging: scoring failed: \(error)")
    }
    measureRangingCost(beacons: Int(value("--beacons", 5000)))
}

private func measureRangingCost(beacons: Int) {
    let uuid = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
    let ids = (0..<beacons).map {
        BeaconIdentity.iBeacon(uuid: uuid, major: UInt16($0 / 65536), minor: UInt16($0 % 65536))
    }
    // Readings as a 10 Hz radio delivers them: beacons in turn, RSSI scattered about −70 dBm.
    var g = SystemRandomNumberGenerator()
    let rssis = (0..<4096).map { _ in Int8.random(in: -78 ... -62, using: &g) }
    let address = BDAddress(rawValue: 0xC000_0000_0001)
    var engine = RangingEngine()
    let n = 10_000_000
    var sink = 0.0
    let start = ContinuousClock.now
    let cpuStart = threadCPUSeconds()
    for i in 0..<n {
        let now = Duration.nanoseconds(Int64(i) * 100_000_000 / Int64(beacons))
        sink +=
            engine.observe(ids[i % beacons], address: address, rssi: rssis[i & 4095], frameCalibration: -59, at: now)
            ?? 0
    }
    let perSample = (ContinuousClock.now - start).seconds / Double(n) * 1e9
    let cpuPerSample = (threadCPUSeconds() - cpuStart) / Double(n) * 1e9

    // The filter alone.
    var filter = RangingFilter(rssi: -70, rssiAt1m: -59, at: 0, k: 8.69, configuration: RangingFilterConfiguration())
    let fc = RangingFilterConfiguration()
    let fStart = ContinuousClock.now
    let fCPU = threadCPUSeconds()
    for i in 0..<n {
        filter.update(rssi: Double(rssis[i & 4095]), rssiAt1m: -59, at: Double(i) * 0.1, k: 8.69, configuration: fc)
    }
    let perFilter = (ContinuousClock.now - fStart).seconds / Double(n) * 1e9
    let cpuPerFilter = (threadCPUSeconds() - fCPU) / Double(n) * 1e9
    sink += filter.distance

    // Memory: RSS growth while 100,000 beacons are tracked, per beacon.
    let count = 100_000
    var config = RangingConfiguration()
    config.capacity = count
    let before = residentKiB()
    var big = RangingEngine(configuration: config)
    for i in 0..<count {
        let a = BDAddress(rawValue: 0xC000_0000_0000 | UInt64(i))
        big.observe(.address(a), address: a, rssi: -70, frameCalibration: nil, at: .milliseconds(i))
    }
    let after = residentKiB()
    sink += Double(big.trackedCount)
    // Wall time suffers from other processes on a shared machine; the thread's CPU time does less.
    print(
        "ranging: \(String(format: "%.1f", perSample)) ns wall / \(String(format: "%.1f", cpuPerSample)) ns CPU "
            + "per reading (engine, \(beacons) beacons), \(String(format: "%.1f", perFilter)) ns wall / "
            + "\(String(format: "%.1f", cpuPerFilter)) ns CPU per filter update; "
            + "\(RangingEngine.bytesPerTrack) bytes per tracked beacon by layout, "
            + "\((after - before) * 1024 / count) bytes by RSS growth over \(count) beacons (sink \(sink > 0))")
}

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), seconds.
private func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// VmRSS from /proc/self/status, in KiB.
private func residentKiB() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}
