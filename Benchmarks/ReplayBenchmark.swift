import BLETransport
import Foundation

// `blegateway-bench replay`: the whole `blegateway` process on a 1,000,000-report corpus built from the real captures
// in ../shared/captures/ (their advertising reports, in file order, repeated), lossless and timed:
//   1. `scan --device file:CORPUS --json` into a pipe this benchmark reads: every report a line, twice the same lines
//      (apart from `ts`);
//   2. the same into /dev/null, three times: wall, CPU per report, peak RSS;
//   3. Home Assistant's parser (bluetooth-data-tools, from PyPI, in a venv) on the same reports' advertising data, in
//      the same run, as the peer;
//   4. `run --device file:CORPUS` (decoding, filters, ranging, the spool; no broker): sightings per second and drops;
//   5. instructions per report for the whole `scan --json` process under callgrind on a stripped copy of the binary,
//      from runs over 1,000 and 3,000 reports (divided difference), when valgrind is installed.
// Options: `--reports N` (1,000,000), `--captures DIR` (../shared/captures), `--venv DIR`.

func runReplayBenchmark(args: [String]) async throws {
    let reports = benchmarkOption(args, "--reports", 1_000_000)
    let captures = stringOption(args, "--captures") ?? "../shared/captures"
    let venv = stringOption(args, "--venv") ?? "/var/cache/blegateway-bench-venv"
    let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    let gateway = binDir.appendingPathComponent("blegateway").path
    let work = FileManager.default.currentDirectoryPath + "/.build/bench-replay"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)

    let packets = try advertisingReports(in: captures)
    guard !packets.isEmpty else {
        print("replay: no advertising reports under \(captures): skipped")
        return
    }
    let corpus = "\(work)/corpus-\(reports).btsnoop"
    try writeCorpus(packets, count: reports, to: corpus)
    print(
        "replay: corpus of \(reports) reports from \(packets.count) real ones (\(captures)), \(fileSize(corpus)) bytes")

    // 1. Lossless and deterministic.
    let first = try countLines(gateway, ["scan", "--device", "file:\(corpus)", "--json"])
    let second = try countLines(gateway, ["scan", "--device", "file:\(corpus)", "--json"])
    print(
        "  scan --json into a pipe: \(first.lines) lines, \(second.lines) the second time; "
            + "same lines apart from ts: \(first.digest == second.digest)"
            + (first.lines == reports ? "" : "  LOST \(reports - first.lines)"))

    // 2. Timed into /dev/null.
    var runs: [Measured] = []
    for _ in 0..<3 { runs.append(try measure(gateway, ["scan", "--device", "file:\(corpus)", "--json"])) }
    let median = runs.sorted { $0.cpu < $1.cpu }[1]
    print(
        String(
            format: "  scan --json > /dev/null: %.1f ns CPU/report (%.1f user + %.1f sys), %.1f ns wall/report, "
                + "peak RSS %.1f MB (median of 3; CPU %@)", median.cpu / Double(reports) * 1e9,
            median.user / Double(reports) * 1e9, median.sys / Double(reports) * 1e9,
            median.wall / Double(reports) * 1e9, Double(median.maxRSSKB) / 1024,
            runs.map { String(format: "%.2f s", $0.cpu) }.joined(separator: ", ") as NSString))

    // 3. The peer: bluetooth-data-tools parsing the same advertising data, no output.
    let python = "\(venv)/bin/python3"
    if FileManager.default.isExecutableFile(atPath: python) {
        let script = FileManager.default.currentDirectoryPath + "/Benchmarks/peer_bluetooth_data_tools.py"
        let peer = try captureOutput(python, [script, corpus])
        print("  peer: " + peer.trimmingCharacters(in: .whitespacesAndNewlines))
    } else {
        print("  peer: skipped: no venv at \(venv) (make bench makes it)")
    }

    // 4. The gateway's own path: decoding, ranging, the spool.
    let config = "\(work)/run.yaml"
    try? FileManager.default.removeItem(atPath: "\(work)/spool")
    try """
    gateway:
      id: bench-replay
    adapter:
      device: file:\(corpus)
    mqtt:
      broker: mqtt://127.0.0.1:1
    spool:
      path: \(work)/spool/spool.db
    remote_config:
      enabled: false
    """.write(toFile: config, atomically: true, encoding: .utf8)
    try FileManager.default.createDirectory(atPath: "\(work)/spool", withIntermediateDirectories: true)
    let run = try measure(gateway, ["run", "--config", config], stderrPath: "\(work)/run.log")
    let log = (try? String(contentsOfFile: "\(work)/run.log", encoding: .utf8)) ?? ""
    let end =
        log.split(separator: "\n").first { $0.contains("end of the capture:") }
        .map { String($0[($0.range(of: "end of the capture:")?.lowerBound ?? $0.startIndex)...]) } ?? "(no end line)"
    print(
        String(
            format: "  run --device file:CORPUS: %.2f s wall, %.2f s CPU, %.0f sightings/s by wall, "
                + "peak RSS %.1f MB; %@", run.wall, run.cpu, Double(reports) / run.wall,
            Double(run.maxRSSKB) / 1024, end as NSString))

    // 5. Instructions per report, which do not move with the machine's load.
    if FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") {
        let stripped = "\(work)/blegateway-stripped"
        try? FileManager.default.removeItem(atPath: stripped)
        try FileManager.default.copyItem(atPath: gateway, toPath: stripped)
        _ = try captureOutput("/usr/bin/strip", [stripped])
        var counts: [Int: Int] = [:]
        var valgrindFailure = ""
        for n in [1000, 3000] {
            let small = "\(work)/corpus-\(n).btsnoop"
            try writeCorpus(packets, count: n, to: small)
            let out = try captureOutput(
                "/usr/bin/valgrind",
                [
                    "--tool=callgrind", "--callgrind-out-file=/dev/null", stripped, "scan",
                    "--device", "file:\(small)", "--json",
                ], stderrToo: true)
            counts[n] = collectedInstructions(out)
            if counts[n] == 0 {
                valgrindFailure =
                    out.split(separator: "\n").first { $0.contains("impossible") || $0.contains("error") }
                    .map(String.init) ?? "no Collected line"
            }
        }
        if let a = counts[1000], let b = counts[3000], a > 0, b > 0 {
            print(
                "  callgrind, whole scan --json process: \(a) instructions for 1,000 reports, \(b) for 3,000: "
                    + "\((b - a) / 2000) instructions/report")
        } else {
            print("  callgrind: no count (valgrind did not finish the run: \(valgrindFailure))")
        }
    }
}

private func stringOption(_ args: [String], _ name: String) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}

/// Every controller→host advertising report packet of every btsnoop file in `dir`, in file order.
private func advertisingReports(in dir: String) throws -> [H4Packet] {
    let names =
        (try? FileManager.default.contentsOfDirectory(atPath: dir))?.filter { $0.hasSuffix(".btsnoop") }
        .sorted() ?? []
    var out: [H4Packet] = []
    for name in names {
        guard let data = FileManager.default.contents(atPath: "\(dir)/\(name)") else { continue }
        var reader = try BtsnoopReader([UInt8](data))
        while let r = reader.next() {
            if r.direction == .received, r.packet.isAdvertisingReport { out.append(r.packet) }
        }
    }
    return out
}

private func writeCorpus(_ packets: [H4Packet], count: Int, to path: String) throws {
    var bytes = Btsnoop.header()
    bytes.reserveCapacity(count * 64)
    for i in 0..<count {
        bytes += Btsnoop.record(packets[i % packets.count], direction: .received, unixMicroseconds: Int64(i) * 100)
    }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

private func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}

private struct Measured {
    var wall: Double
    var user: Double
    var sys: Double
    var maxRSSKB: Int
    var cpu: Double { user + sys }
}

/// Runs a command with stdout to /dev/null (stderr to `stderrPath` or /dev/null); its own rusage from wait4.
private func measure(_ executable: String, _ arguments: [String], stderrPath: String = "/dev/null") throws -> Measured {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for arg in argv { free(arg) } }
    var pid: pid_t = 0
    let start = DispatchTime.now()
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard rc == 0 else { throw BenchFailure("posix_spawn \(executable): \(rc)") }
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    let wall = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return Measured(wall: wall, user: s(usage.ru_utime), sys: s(usage.ru_stime), maxRSSKB: usage.ru_maxrss)
}

/// Lines of a command's stdout, and a digest of them without their `ts` field.
private func countLines(_ executable: String, _ arguments: [String]) throws -> (lines: Int, digest: UInt64) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = FileHandle.nullDevice
    try p.run()
    var lines = 0
    var digest: UInt64 = 0xcbf2_9ce4_8422_2325
    var pending: [UInt8] = []
    let ts = Array("\"ts\":".utf8)
    let handle = pipe.fileHandleForReading
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
        pending.append(contentsOf: chunk)
        var start = 0
        while let nl = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
            var line = pending[start..<nl]
            // `"ts":<number>` is left out of the digest: the replay stamps it with the clock.
            if let at = line.firstRange(of: ts), let comma = line[at.upperBound...].firstIndex(of: UInt8(ascii: ",")) {
                line = line[..<at.lowerBound] + line[comma...]
            }
            for b in line { digest = (digest ^ UInt64(b)) &* 0x100_0000_01b3 }
            digest = (digest ^ 10) &* 0x100_0000_01b3
            lines += 1
            start = nl + 1
        }
        pending.removeFirst(start)
    }
    p.waitUntilExit()
    return (lines, digest)
}

private func captureOutput(_ executable: String, _ arguments: [String], stderrToo: Bool = false) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let pipe = Pipe()
    p.standardOutput = stderrToo ? FileHandle.nullDevice : pipe
    p.standardError = stderrToo ? pipe : FileHandle.nullDevice
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// callgrind's "Collected : N" line.
private func collectedInstructions(_ output: String) -> Int {
    for line in output.split(separator: "\n") where line.contains("Collected :") {
        if let n = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
            return n
        }
    }
    return 0
}

private struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
