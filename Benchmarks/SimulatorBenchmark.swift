import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Glibc

/// Advertising reports per second that the virtual radio delivers to one connected host at
/// `--speed max`, counted by that host after deframing, and the process's peak RSS.
///
/// Arguments: `--beacons N` (default 1000), `--seconds S` of real time to count (default 5),
/// `--extended` to scan with the extended commands (larger reports).
func runSimulatorBenchmark(arguments: [String]) {
    func value(_ name: String, _ fallback: Double) -> Double {
        guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Double(arguments[i + 1]) else {
            return fallback
        }
        return v
    }
    let beacons = Int(value("--beacons", 1000))
    let seconds = value("--seconds", 5)
    let extended = arguments.contains("--extended")

    var scenario = Scenario(name: "bench")
    scenario.radio.lossProbability = 0
    scenario.radio.sensitivityDBm = -200
    scenario.gateways = [
        GatewaySpec(id: "gw-bench", position: Vec3(0, 0, 2), address: BDAddress(rawValue: 0x001B_DCF0_0001))
    ]
    let uuid: [UInt8] = Array(0..<16)
    for i in 0..<beacons {
        scenario.emitters.append(
            EmitterSpec(
                name: "b\(i)", role: .beacon,
                frame: .iBeacon(uuid: uuid, major: 1, minor: UInt16(i % 65536), measuredPower: -59),
                address: BDAddress(rawValue: 0xC000_0000_0000 | UInt64(i)), addressType: 1,
                motion: .fixed(Vec3(Double(i % 50), Double(i / 50), 1)), interval: 0.1, rssiAt1m: -59, scanResponse: nil
            ))
    }
    let dir = NSTemporaryDirectory() + "blesim-bench-\(getpid())"
    var options = SimulatorOptions(socketDirectory: dir)
    options.speed = .max
    let sim: Simulator
    do { sim = try Simulator(scenario: scenario, options: options) } catch {
        print("simulator: cannot start: \(error)")
        return
    }
    let run = Task { try await sim.run() }
    defer {
        run.cancel()
        try? FileManager.default.removeItem(atPath: dir)
    }

    // The host: literal bring-up and scan-enable bytes through the tests' raw host, then count reports by reading
    // its socket directly (the measurement loop is the instrument: one read and the deframer, nothing else).
    let host: HCISocketHost
    do { host = try HCISocketHost(path: sim.socketPath(for: "gw-bench")) } catch {
        print("simulator: cannot connect: \(error)")
        return
    }
    let fd = host.fd
    defer { withExtendedLifetime(host) {} }  // it owns the socket the loop below reads
    var commands: [[UInt8]] = [
        [0x01, 0x03, 0x0C, 0x00],  // Reset
        [0x01, 0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x00, 0x20],  // Set Event Mask + LE Meta
        [0x01, 0x01, 0x20, 0x08, 0x1F, 0x10, 0, 0, 0, 0, 0, 0],  // LE Set Event Mask + extended report
    ]
    commands +=
        extended
        ? [
            [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x10, 0x00],
            [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0, 0, 0, 0],
        ]
        : [[0x01, 0x0B, 0x20, 0x07, 0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00], [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]]
    do {
        for c in commands { try host.command(c) }
    } catch {
        print("simulator: bring-up failed: \(error)")
        return
    }
    var deframer = H4Deframer()
    var buf = [UInt8](repeating: 0, count: 1 << 16)

    var reports = 0
    var bytes = 0
    let start = ContinuousClock.now
    let deadline = start + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { break }
        bytes += n
        deframer.append(buf[0..<n])
        while let p = deframer.next() {
            if p.payload.count > 2 && p.payload[0] == 0x3E && (p.payload[2] == 0x02 || p.payload[2] == 0x0D) {
                reports += 1
            }
        }
    }
    let elapsed = (ContinuousClock.now - start).seconds
    let virtualSeconds = sim.clock.now().seconds
    print(
        "simulator: \(beacons) beacons, \(extended ? "extended" : "legacy") reports, one host, --speed max: "
            + "\(Int(Double(reports) / elapsed)) reports/s (\(reports) in \(String(format: "%.2f", elapsed)) s, "
            + "\(String(format: "%.1f", Double(bytes) / elapsed / 1e6)) MB/s, virtual time \(Int(virtualSeconds)) s); "
            + "peak RSS \(peakRSSKiB() / 1024) MiB")
}

/// VmHWM from /proc/self/status, in KiB.
private func peakRSSKiB() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}
