import BLEConfiguration
import BLEDomain
import BLEGateway
import BLETestSupport
import BLETransport
import Foundation
import Glibc
import Logging

/// What a gateway costs while it waits on an adapter it cannot use (issue #5: "never a busy loop, idle CPU below 1 %
/// while waiting"). For each bad adapter — absent (a socket path nobody listens on), stuck (never answers),
/// every command refused, BR/EDR only — a supervised `HCISightingSource` with the shipped lifecycle settings runs on
/// the real `SystemClock` for `--seconds` (default 60), and this process's CPU time (getrusage: user + system) over
/// that span is reported as a share of one core, with how often it woke, what reached the controller and the
/// published state.
///
/// The controllers are a `blegateway sim` child process (built beside this one by `make bench`), so its CPU is its
/// own and not counted; this process runs only the gateway's source (and the benchmark's sleeping main task).
///
/// usage: blegateway-bench adapter-idle [-- --seconds 60]
func runAdapterIdleBenchmark(args: [String]) async throws {
    let seconds = benchmarkOption(args, "--seconds", 60)
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let blegateway = me.deletingLastPathComponent().appendingPathComponent("blegateway").path
    guard FileManager.default.isExecutableFile(atPath: blegateway) else {
        throw AdapterIdleError(message: "no \(blegateway): build it beside the benchmark (make bench builds both)")
    }
    let dir = NSTemporaryDirectory() + "adapter-idle-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // No advertisers: the simulator's radio has nothing to do, and no controller ever scans anyway.
    let scenario = """
        name: adapter-idle
        gateways:
          - {id: gw-stuck, position: [0, 0]}
          - {id: gw-errors, position: [5, 0]}
          - {id: gw-le, position: [10, 0]}
        faults:
          - {at_s: 0, gateway: gw-stuck, type: power_off}
          - {at_s: 0, gateway: gw-errors, type: command_errors}
          - {at_s: 0, gateway: gw-le, type: le_unsupported}

        """
    try scenario.write(toFile: dir + "/scenario.yaml", atomically: true, encoding: .utf8)
    let statusLog = dir + "/sim-status.log"
    _ = FileManager.default.createFile(atPath: statusLog, contents: nil)
    let sim = Process()
    sim.executableURL = URL(fileURLWithPath: blegateway)
    sim.arguments = [
        "sim", "--scenario", dir + "/scenario.yaml", "--socket-dir", dir + "/sockets", "--speed", "1",
        "--status-every", "1",
    ]
    sim.standardOutput = FileHandle.nullDevice
    // Status lines go to a file, read between cases: no thread of this process reads a pipe meanwhile.
    sim.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: statusLog))
    try sim.run()
    defer {
        sim.terminate()
        sim.waitUntilExit()
    }
    let sockets = ["gw-stuck", "gw-errors", "gw-le"].map { dir + "/sockets/\($0).sock" }
    for _ in 0..<200 where !sockets.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) {
        try await Task.sleep(for: .milliseconds(50))
    }
    guard sockets.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) else {
        throw AdapterIdleError(message: "blegateway sim did not create its sockets in 10 s")
    }
    try await Task.sleep(for: .milliseconds(200))  // the faults at 0 are applied on the simulator's first turn

    print("adapter-idle: \(seconds) s per case, SystemClock, shipped lifecycle settings (max_backoff 30 s);")
    print("  gateway source in this process; controllers in a separate `blegateway sim` process (not counted)")
    print("  load before: \(loadAverage())")
    print("  case     state        cpu_ms  cpu_%_of_core  clock_sleeps  commands  ladder_steps  published")
    let cases: [(String, String, String?)] = [
        ("absent", dir + "/sockets/nobody.sock", nil),
        ("stuck", sockets[0], "gw-stuck"),
        ("errors", sockets[1], "gw-errors"),
        ("no-le", sockets[2], "gw-le"),
    ]
    var worst = 0.0
    for (name, path, gateway) in cases {
        let r = try await idleCase(path: path, seconds: seconds)
        if gateway != nil { try await Task.sleep(for: .milliseconds(1500)) }  // the simulator's next status line
        let commands = gateway.map { latestCommands(in: statusLog, gateway: $0) }.map { "\($0)" } ?? "-"
        let percent = r.cpu / r.wall * 100
        worst = max(worst, percent)
        let steps = r.statistics.map { $0.attempts.values.reduce(0, +) } ?? 0
        print(
            "  "
                + [
                    pad(name, 8), pad(r.state, 12), pad(String(format: "%.1f", r.cpu * 1000), 7),
                    pad(String(format: "%.3f", percent), 14), pad("\(r.sleeps)", 13), pad(commands, 9),
                    pad("\(steps)", 13), "\(r.published)",
                ].joined(separator: " "))
        print("           reason: \(r.reason)")
    }
    print("  load after: \(loadAverage())")
    print("  worst case: \(String(format: "%.3f", worst)) % of one core (target: below 1 %)")
}

private struct AdapterIdleError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

private struct IdleResult {
    var cpu: Double
    var wall: Double
    var sleeps: Int
    var published: Int
    var state: String
    var reason: String
    var statistics: AdapterLifecycle.Statistics?
}

private func idleCase(path: String, seconds: Int) async throws -> IdleResult {
    let clock = CountingClock()
    var logger = Logger(label: "adapter-idle")
    logger.logLevel = .critical  // the gateway's log lines would be this benchmark's output, not its subject
    let source = HCISightingSource(
        spec: .unix(path: path), mode: .exclusive, scan: GatewayConfiguration.Scan(), clock: clock, logger: logger,
        lifecycle: AdapterLifecycle.Configuration())
    let reports = Locked<[AdapterReport]>([])
    let startCPU = processCPUSeconds()
    let start = ContinuousClock.now
    let run = Task {
        try await source.run(adapter: { r in reports.withLock { $0.append(r) } }, sighting: { _ in })
    }
    try await Task.sleep(for: .seconds(seconds))
    let cpu = processCPUSeconds() - startCPU
    let wall = (ContinuousClock.now - start).seconds
    let statistics = source.lifecycleStatistics
    run.cancel()
    _ = await run.result
    let published = reports.withLock { $0 }
    return IdleResult(
        cpu: cpu, wall: wall, sleeps: clock.sleeps, published: published.count,
        state: published.last.map { "\($0.state)" } ?? "-", reason: published.last?.reason ?? "-",
        statistics: statistics)
}

/// User plus system CPU time of the whole process (every thread), in seconds.
private func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(usage.ru_utime) + s(usage.ru_stime)
}

/// The commands the simulator's controller for `gateway` has received, from its latest status line.
private func latestCommands(in log: String, gateway: String) -> Int {
    guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n").reversed() where line.contains(" \(gateway) ") {
        if let field = line.split(separator: " ").first(where: { $0.hasPrefix("commands=") }) {
            return Int(field.dropFirst("commands=".count)) ?? -1
        }
    }
    return 0
}

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
        .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}

func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
}
