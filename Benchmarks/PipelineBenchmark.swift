import BLEPublishing
import BLESpool
import BLETestSupport
import BLETransport
import Foundation

/// The gateway's publishing path as a whole, against a mosquitto on loopback:
/// - replay: N readings already durable in the spool (a broker outage's backlog), published at QoS 1 through
///   `SpoolPublisher`'s bounded window and acknowledged, until the spool is empty;
/// - latency: a state event committed with `appendDurably` (fsync included) until a subscriber on loopback
///   receives it, one at a time, p50 / p99 / max.
///
/// usage: runPipelineBenchmark(arguments: ["--backlog", "100000", "--events", "1000", "--window", "200"])
func runPipelineBenchmark(arguments: [String]) async throws {
    func option(_ name: String, _ fallback: Int) -> Int { benchmarkOption(arguments, name, fallback) }
    let backlog = option("--backlog", 100_000)
    let events = option("--events", 1000)
    let window = option("--window", 200)
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-bench-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let broker = try benchBroker(directory: work)
    defer { broker.kill() }

    let spool = try Spool(configuration: SpoolConfiguration(path: work.appendingPathComponent("spool.sqlite").path))
    let body = Array(
        #"{"id":"ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2","kind":"ibeacon","address":"C0:CA:4F:27:82:F9","rssi":-71.4,"samples":9,"interval_s":1}"#
            .utf8)
    for i in 0..<backlog {
        _ = spool.append(
            Reading(
                .sample, topic: "bench/gw/beacons/b\(i % 500)", body: body, qos: 1, ts: 1.7e9 + Double(i),
                clockSynchronized: true, run: "0123456789abcdef"))
        if i % 20_000 == 19_999 { _ = try spool.commit() }
    }
    _ = try spool.commit()

    var c = MQTTConfiguration()
    c.host = "127.0.0.1"
    c.port = broker.port
    c.clientID = "pipeline-bench"
    c.maxInFlight = window
    let client = MQTTClient(configuration: c)
    let clock = SystemClock()
    let publisher = SpoolPublisher(spool: spool, client: client, window: window, clock: clock)

    var sc = MQTTConfiguration()
    sc.host = "127.0.0.1"
    sc.port = broker.port
    sc.clientID = "pipeline-bench-subscriber"
    let subscriber = MQTTClient(configuration: sc)
    let stream = try subscriber.subscribe("bench/gw/status", qos: .atLeastOnce)
    let arrivals = ArrivalLog()

    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await subscriber.run() }
        group.addTask {
            for await m in stream {
                if let text = String(bytes: m.payload, encoding: .utf8), let r = text.range(of: "\"seq\":") {
                    let digits = text[r.upperBound...].prefix { $0.isNumber }
                    if let seq = UInt64(digits) { arrivals.record(seq, at: ContinuousClock.now) }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(500))  // the subscriber's SUBACK

        // Replay: the backlog drains through the window.
        group.addTask { try await client.run() }
        group.addTask { for await e in client.events { publisher.clientEvent(e) } }
        group.addTask { await spool.run(clock: clock) }
        group.addTask { await publisher.run() }
        let start = ContinuousClock.now
        while spool.statistics.depth > 0 { try await Task.sleep(for: .milliseconds(5)) }
        let replay = (ContinuousClock.now - start).seconds
        print(
            String(
                format: "replay  %d readings at QoS 1, window %d: %.2f s, %.0f readings/s (acknowledged %llu)",
                backlog, window, replay, Double(backlog) / replay, publisher.statistics.acknowledged))
        // The peer in the same run: libmosquitto from C, QoS 1, the same window, count and payload size (a reading's
        // envelope and body as published), so the replay's cost over the bare client shows.
        let size = body.count + 80
        let c = try cPublishRate(
            try compileCPublisher(into: work), port: broker.port, messages: backlog,
            qos: .atLeastOnce, size: size, window: window)
        print(
            String(
                format:
                    "        C libmosquitto, QoS 1, window %d, %d messages of %d bytes: %.0f msgs/s; replay = %.0f %%",
                window, backlog, size, c, Double(backlog) / replay / c * 100))

        // Latency: one state event at a time, committed durably, until the subscriber has it.
        var latencies: [Double] = []
        for i in 0..<events {
            let t0 = ContinuousClock.now
            let seq = try spool.appendDurably(
                Reading(
                    .state, topic: "bench/gw/status",
                    body: Array(#"{"state":"online","i":\#(i)}"#.utf8), qos: 1,
                    retain: false, ts: 1.7e9, clockSynchronized: true,
                    run: "0123456789abcdef"))
            publisher.readingsAvailable()
            while arrivals.time(of: seq) == nil { await Task.yield() }
            latencies.append((arrivals.time(of: seq)! - t0).seconds * 1000)
        }
        latencies.sort()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(
            String(
                format:
                    "latency state event → subscriber (%d events, fsync per event): p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                events, pct(0.5), pct(0.99), latencies.last ?? 0))
        group.cancelAll()
    }
}

/// When each seq reached the subscriber.
final class ArrivalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [UInt64: ContinuousClock.Instant] = [:]
    func record(_ seq: UInt64, at t: ContinuousClock.Instant) {
        lock.withLock { if times[seq] == nil { times[seq] = t } }
    }
    func time(of seq: UInt64) -> ContinuousClock.Instant? { lock.withLock { times[seq] } }
}
