import BLETestSupport
import Foundation
import Glibc

/// `blegateway-bench gateway-idle`: what a whole gateway costs when nothing happens (issue #42, "idle is idle": no
/// timer wakes a gateway that has nothing to do but the protocol's own, ≤ 0.05 % of a core).
///
/// Real processes, as deployed: a mosquitto on loopback, a `blegateway sim` whose radio has nothing advertising, and
/// one `blegateway run` per case on its own simulated controller (exclusive mode: the host owns the controller and
/// scans), with the shipped settings but for the device, broker and spool:
///   - `exclusive`: scanning, publishing health every 30 s, remote config followed;
///   - `peripherals`: the same with a peripheral configured that never advertises (its waiting connection).
/// Shared mode needs a kernel with Bluetooth, which this machine has not: it is measured in the VM by
/// Tests/kernel, not here.
///
/// After `--warmup` seconds (default 20: connected, scanning, the first health report out), each gateway's CPU time
/// (user + system of every thread, /proc/PID/stat) is taken over `--seconds` (default 600), and, with `perf`
/// installed, its context switches (`perf stat -e context-switches -p PID`, threads started later included): each
/// wake-up of a sleeping thread is one.
///
/// usage: blegateway-bench gateway-idle [-- --seconds 600 --warmup 20]
func runGatewayIdleBenchmark(args: [String]) async throws {
    let seconds = benchmarkOption(args, "--seconds", 600)
    let warmup = benchmarkOption(args, "--warmup", 20)
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let blegateway = me.deletingLastPathComponent().appendingPathComponent("blegateway").path
    guard FileManager.default.isExecutableFile(atPath: blegateway) else {
        throw GatewayIdleError("no \(blegateway): build it beside the benchmark (make bench builds both)")
    }
    let dir = URL(fileURLWithPath: NSTemporaryDirectory() + "gateway-idle-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let broker = try benchBroker(directory: dir)
    defer { _ = broker.terminate() }

    let cases = ["exclusive", "peripherals"]
    let scenario =
        "name: gateway-idle\ngateways:\n"
        + cases.enumerated().map { "  - {id: gw-\($1), position: [\($0 * 5), 0]}\n" }.joined()
    try scenario.write(to: dir.appendingPathComponent("scenario.yaml"), atomically: true, encoding: .utf8)
    let sim = try spawn(
        blegateway,
        [
            "sim", "--scenario", dir.appendingPathComponent("scenario.yaml").path, "--socket-dir",
            dir.appendingPathComponent("sockets").path, "--speed", "1", "--status-every", "0",
        ],
        log: dir.appendingPathComponent("sim.log"))
    defer { stop(sim) }
    let sockets = cases.map { dir.appendingPathComponent("sockets/gw-\($0).sock").path }
    for _ in 0..<200 where !sockets.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) {
        try await Task.sleep(for: .milliseconds(50))
    }
    guard sockets.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) else {
        throw GatewayIdleError("blegateway sim did not create its sockets in 10 s")
    }

    var gateways: [(name: String, process: Process)] = []
    defer { for g in gateways { stop(g.process) } }
    for (name, socket) in zip(cases, sockets) {
        var yaml = """
            gateway: {id: gw-\(name)}
            adapter: {device: "unix:\(socket)", mode: exclusive}
            mqtt: {broker: "mqtt://127.0.0.1:\(broker.port)", prefix: idle}
            spool: {path: "\(dir.appendingPathComponent("\(name).sqlite").path)"}

            """
        if name == "peripherals" {
            yaml += "peripherals:\n  - {address: \"00:1B:DC:20:00:09\", name: never-advertises}\n"
        }
        let config = dir.appendingPathComponent("\(name).yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        gateways.append(
            (
                name,
                try spawn(blegateway, ["run", "--config", config.path], log: dir.appendingPathComponent("\(name).log"))
            ))
    }
    try await Task.sleep(for: .seconds(warmup))
    for g in gateways where !g.process.isRunning {
        throw GatewayIdleError("gateway \(g.name) exited during the warm-up; its log: \(dir.path)/\(g.name).log")
    }

    let perf = ["/usr/bin/perf", "/usr/sbin/perf"].first { FileManager.default.isExecutableFile(atPath: $0) }
    print("gateway-idle: \(seconds) s per gateway after a \(warmup) s warm-up, side by side; mosquitto and the")
    print("  simulator (nothing advertising) are separate processes, not counted")
    print("  load before: \(loadAverage())")
    let before = gateways.map { processCPUSeconds($0.process.processIdentifier) }
    let counters = perf.map { perf in
        gateways.map { g in
            let out = dir.appendingPathComponent("\(g.name).perf")
            return (
                out,
                try? spawn(
                    perf,
                    [
                        "stat", "-x", ",", "-e", "context-switches", "-o", out.path, "-p",
                        "\(g.process.processIdentifier)", "--", "sleep", "\(seconds)",
                    ],
                    log: dir.appendingPathComponent("\(g.name).perf.log"))
            )
        }
    }
    try await Task.sleep(for: .seconds(seconds))
    let after = gateways.map { processCPUSeconds($0.process.processIdentifier) }
    for (_, p) in counters ?? [] { p?.waitUntilExit() }
    print("  load after: \(loadAverage())")
    print("  case         cpu_ms   cpu_%_of_core  wakeups_per_s  rss_MiB")
    var worst = 0.0
    for (i, g) in gateways.enumerated() {
        let cpu = after[i] - before[i]
        let percent = cpu / Double(seconds) * 100
        worst = max(worst, percent)
        let switches = counters.flatMap { contextSwitches(in: $0[i].0) }
        print(
            "  " + pad(g.name, 12) + " " + pad(String(format: "%.0f", cpu * 1000), 8) + " "
                + pad(String(format: "%.4f", percent), 15) + " "
                + pad(switches.map { String(format: "%.2f", Double($0) / Double(seconds)) } ?? "n/a (no perf)", 14)
                + " " + String(format: "%.1f", Double(processMemory(g.process.processIdentifier, "VmRSS")) / 1_048_576))
    }
    print("  worst case: \(String(format: "%.4f", worst)) % of one core (target: at most 0.05 %)")
    if worst > 0.05 {
        failedBenchmarkChecks.withLock { $0.append("gateway-idle: \(String(format: "%.4f", worst)) % > 0.05 %") }
    }
}

private struct GatewayIdleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A child process with stdout and stderr to `log`.
private func spawn(_ executable: String, _ arguments: [String], log: URL) throws -> Process {
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let handle = try FileHandle(forWritingTo: log)
    p.standardOutput = handle
    p.standardError = handle
    try p.run()
    return p
}

private func stop(_ p: Process) {
    guard p.isRunning else { return }
    p.terminate()
    p.waitUntilExit()
}

/// `perf stat -x ,` output: the count on the context-switches line.
private func contextSwitches(in file: URL) -> Int? {
    guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.contains("context-switches") {
        return Int(line.split(separator: ",").first ?? "")
    }
    return nil
}
