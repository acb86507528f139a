import BLEDomain
import BLEESPHome
import BLETestSupport
import BLETransport
import Foundation
import Logging

/// `blegateway-bench esphome -- --rate R --seconds S` (docs/BENCHMARKS.md, "esphome"): the ESPHome proxy (Noise, one
/// subscribed client) fed R advertisements a second for S seconds, in 10 ms bursts, the way the gateway's `observe`
/// feeds it; the client is aioesphomeapi 29.9.0 from `make esphome-venv` (Benchmarks/esphome_bench_client.py).
/// Figures: advertisements handed over, those the client received and those the proxy dropped for it (its backlog
/// full); this process's CPU (getrusage, every thread) with the client subscribed, against the same paced loop with no
/// subscriber, per advertisement; the client's own CPU; and the latency from `advertise` to the client's callback.
func runESPHomeBenchmark(arguments: [String]) async throws {
    let rate = benchmarkOption(arguments, "--rate", 2000)
    let seconds = benchmarkOption(arguments, "--seconds", 10.0)
    let python = "/var/cache/blegateway-esphome-venv/bin/python"
    guard FileManager.default.isExecutableFile(atPath: python) else {
        print("esphome: needs \(python) (make esphome-venv)")
        return
    }
    let key = [UInt8](repeating: 0x5A, count: 32)
    // An ephemeral port, the one bound told by the proxy once clients can connect.
    var configuration = ESPHomeProxyConfiguration(name: "bench", psk: key, port: 0)
    configuration.host = "127.0.0.1"
    var logger = Logger(label: "bench")
    logger.logLevel = .warning
    let (listening, bound) = AsyncStream.makeStream(of: Int.self)
    let proxy = ESPHomeProxy(
        configuration: configuration, version: "bench", clock: SystemClock(), logger: logger,
        onListening: { bound.yield($0) })
    let server = Task { try await proxy.run() }
    defer { server.cancel() }
    var ports = listening.makeAsyncIterator()
    guard let port = await ports.next() else { return }

    // The same paced loop, first with nobody subscribed (what building and handing over costs without the proxy's
    // work), then with the client.
    let idle = try await pace(proxy, rate: rate, seconds: min(seconds, 5))
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("esphome_bench_client.py").path
    let client = Process()
    client.executableURL = URL(fileURLWithPath: python)
    client.arguments = [script, "\(port)", Data(key).base64EncodedString(), "\(seconds + 2)"]
    let out = Pipe()
    client.standardOutput = out
    try client.run()
    let lines = LineReader(out.fileHandleForReading)
    guard lines.next() == "subscribed" else {
        print("esphome: the client did not subscribe")
        return
    }
    let busy = try await pace(proxy, rate: rate, seconds: seconds)
    let result = lines.next() ?? "{}"
    client.waitUntilExit()
    let json = (try? JSONSerialization.jsonObject(with: Data(result.utf8))) as? [String: Any] ?? [:]
    let stats = proxy.statistics
    let added = (busy.cpu / Double(busy.sent) - idle.cpu / Double(idle.sent)) * 1e6
    print(
        """
        esphome: \(rate) advertisements/s for \(seconds) s to one aioesphomeapi 29.9.0 client over Noise on loopback
          handed over \(busy.sent); the client received \(json["received"] ?? "?"); the proxy dropped \
        \(stats.advertisementsDropped) for it (backlog full)
          gateway-side CPU: \(String(format: "%.2f", busy.cpu / Double(busy.sent) * 1e6)) µs per advertisement \
        subscribed, \(String(format: "%.2f", idle.cpu / Double(idle.sent) * 1e6)) µs with nobody subscribed: \
        \(String(format: "%.2f", added)) µs added by the proxy
          client CPU \(json["cpu_s"] ?? "?") s (Python, aioesphomeapi's Cython frame reader)
          latency advertise → client callback: p50 \(json["p50_ms"] ?? "?") ms, p99 \(json["p99_ms"] ?? "?") ms, \
        max \(json["max_ms"] ?? "?") ms
        """)
}

/// Hands `rate` advertisements a second to the proxy for `seconds`, in bursts every 10 ms; returns how many and this
/// process's CPU seconds meanwhile.
private func pace(_ proxy: ESPHomeProxy, rate: Int, seconds: Double) async throws -> (sent: Int, cpu: Double) {
    let perBurst = max(1, rate / 100)
    let bursts = Int(seconds * 100)
    let start = ContinuousClock.now
    let cpu0 = processCPUSeconds()
    var sent = 0
    for burst in 0..<bursts {
        for i in 0..<perBurst {
            // Manufacturer data, company 0xFFFF (for tests), carrying the send time: 12 bytes, like a small beacon.
            var ad: [UInt8] = [0x0B, 0xFF, 0xFF, 0xFF]
            withUnsafeBytes(of: Date().timeIntervalSince1970.bitPattern.littleEndian) { ad += $0 }
            let s = Sighting(
                address: BDAddress(rawValue: 0xC000_0000_0000 | UInt64(i % 100)), addressType: .random, rssi: -60,
                txPower: nil, timestamp: 0, isConnectable: false, isScanResponse: false,
                advertisement: Advertisement(decoding: ad[...]))
            proxy.advertise(s)
            sent += 1
        }
        try await Task.sleep(until: start + .milliseconds(10 * (burst + 1)), clock: .continuous)
    }
    return (sent, processCPUSeconds() - cpu0)
}

private func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Lines from a pipe, one at a time (the client's `subscribed`, then its result).
private final class LineReader {
    let handle: FileHandle
    var buffer = Data()
    init(_ handle: FileHandle) { self.handle = handle }
    func next() -> String? {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<i], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...i)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer += chunk
        }
    }
}
