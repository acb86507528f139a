import BLEConfiguration
import BLEGateway
import BLEPublishing
import BLESimulator
import BLESpool
import BLETestSupport
import BLETransport
import Foundation
import Logging

/// Notifications from connected peripherals through the whole gateway to an MQTT subscriber, in real time: the
/// simulator's controller over its H4 socket (SystemClock), the gateway's runtime (connection manager,
/// ACL/L2CAP/ATT, GATT client, spool, MQTT) against a mosquitto on loopback, and a subscriber on
/// `…/peripherals/+/char/+`. Each step starts afresh, waits until every peripheral is connected and sending, then
/// measures a steady window:
/// - offered: Handle Value Notifications the simulator handed to the host (`GatewayNode.stats.notificationsSent`);
/// - delivered: values whose `ts` (the moment the gateway's peripheral service had the value) falls in the window,
///   received by the subscriber;
/// - dropped: the simulator's (host reading too slowly), the spool's (samples), the GATT client's and bearers'
///   (health `peripherals.dropped_values`);
/// - added latency per value: subscriber receive time − `ts`, p50 / p99 / max.
/// Every peripheral subscribes to both notifying characteristics of the simulated sensor (Temperature 0x2A6E,
/// Humidity 0x2A6F), so `notify_interval_ms` 10 offers 2 × 100/s per peripheral.
///
/// usage: blegateway-bench peripherals [-- --window 10 --peripherals 20 --commit-window-ms 100 --value-window-ms 5
///        --inflight 200]
func runPeripheralsBenchmark(args: [String]) async {
    signal(SIGPIPE, SIG_IGN)
    let window = benchmarkOption(args, "--window", 10)
    let count = benchmarkOption(args, "--peripherals", 20)
    let commitWindow = benchmarkOption(args, "--commit-window-ms", 100)
    let valueWindow = benchmarkOption(args, "--value-window-ms", 5)
    let inflight = benchmarkOption(args, "--inflight", 200)
    // notify_interval_ms (nil: flood). The scenario takes 2 ms at the least.
    let steps: [Int?] = [50, 20, 10, 5, nil]
    print(
        "peripherals: \(count) connected, 2 notifying characteristics each, \(window) s window per step, "
            + "spool commit window \(commitWindow) ms (values \(valueWindow) ms), MQTT in-flight \(inflight), QoS 1")
    print("step         offered/s  delivered/s  sim drops  spool drops  gatt drops  p50 ms  p99 ms  max ms  rss MB")
    for step in steps {
        let name = step.map { "notify \($0)ms" } ?? "flood"
        do {
            let r = try await measurePeripherals(
                count: count, notifyMS: step, window: window,
                commitWindowMS: commitWindow, valueWindowMS: valueWindow,
                inflight: inflight)
            let row = String(
                format: " %9.0f  %11.0f  %9d  %11d  %10d  %6.2f  %6.2f  %6.2f  %6.1f",
                r.offered, r.delivered, r.simDrops, r.spoolDrops, r.gattDrops,
                r.p50 * 1000, r.p99 * 1000, r.max * 1000, Double(r.rss) / 1_048_576)
            print(name.padding(toLength: 12, withPad: " ", startingAt: 0) + row)
        } catch {
            print("\(name): failed: \(error)")
        }
    }
}

private struct PeripheralsResult {
    var offered = 0.0
    var delivered = 0.0
    var simDrops = 0
    var spoolDrops = 0
    var gattDrops = 0
    var p50 = 0.0
    var p99 = 0.0
    var max = 0.0
    var rss = 0
}

/// What the subscriber received: each value's `ts` and its receive time (both Unix seconds), and the last health.
private final class PeripheralArrivals: @unchecked Sendable {
    let lock = NSLock()
    var values: [(ts: Double, received: Double)] = []
    var health: [UInt8] = []
}

private func measurePeripherals(
    count: Int, notifyMS: Int?, window: Int, commitWindowMS: Int, valueWindowMS: Int,
    inflight: Int
) async throws -> PeripheralsResult {
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("peripherals-bench-\(getpid())")
    try? FileManager.default.removeItem(at: work)
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let broker = try benchBroker(directory: work)
    defer { broker.kill() }

    let addresses = (1...count).map { String(format: "00:1B:DC:30:00:%02X", $0) }
    let load = notifyMS.map { "notify_interval_ms: \($0)" } ?? "flood: true"
    var scenario = """
        name: peripherals-bench
        radio: {loss_probability: 0, shadowing_sigma_db: 1}
        gateways: [{id: gw-b, position: [0, 0, 2], max_connections: \(Swift.max(24, count + 4))}]
        peripherals:

        """
    for (i, a) in addresses.enumerated() {
        let angle = Double(i) / Double(count) * 2 * Double.pi
        scenario += String(
            format: "  - {name: p%d, local_name: \"Sensor %d\", service_uuids: [\"181A\"], address: \"%@\", "
                + "position: [%.2f, %.2f, 1], interval_ms: 100, %@}\n",
            i + 1, i + 1, a as NSString, 2 * cos(angle), 2 * sin(angle), load as NSString)
    }
    var gatewayYAML = """
        scan: {active: true, interval_ms: 50, window_ms: 50}
        connections: {max: \(count), rssi_interval_s: 0}
        peripherals:

        """
    for (i, a) in addresses.enumerated() {
        gatewayYAML +=
            "  - {address: \"\(a)\", name: p\(i + 1), subscribe: [{service: \"181A\", characteristic: \"2A6E\"}, "
            + "{service: \"181A\", characteristic: \"2A6F\"}]}\n"
    }

    let clock = SystemClock()
    let options = SimulatorOptions(socketDirectory: work.appendingPathComponent("sim").path)
    // Real time; the radio loop wakes at least every 2 ms (as `speed: 1` does) and whenever a link is due.
    let simulator = try Simulator(
        scenario: try ScenarioLoader.parse(scenario), options: options, clock: clock,
        pacing: .clock(batch: .milliseconds(2)))
    var c = GatewayConfiguration()
    c.gateway.id = "gw-b"
    c.mqtt.broker = "mqtt://127.0.0.1:\(broker.port)"
    c.mqtt.prefix = "bench"
    c.mqtt.inflight = inflight
    c.mqtt.reconnectMinSeconds = 0.1
    c.mqtt.reconnectMaxSeconds = 0.5
    c.spool.path = work.appendingPathComponent("spool.sqlite").path
    c.spool.commitWindowMS = Double(commitWindowMS)
    c.spool.valueCommitWindowMS = Double(valueWindowMS)
    c.publishing.healthIntervalSeconds = 1
    c.remoteConfig.enabled = false
    var reader = YAMLConfigurationReader()
    let file = try reader.read(gatewayYAML)
    c.scan = file.scan
    c.connections = file.connections
    c.peripherals = file.peripherals
    c.adapter.device = "unix:\(simulator.socketPath(for: "gw-b"))"

    var logger = Logger(label: "peripherals-bench")
    logger.logLevel = .error
    let runtime = try GatewayRuntime(
        configuration: c,
        makeSource: { role in
            HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-b")), mode: .exclusive, scan: c.scan,
                clock: clock, logger: logger, role: role)
        },
        clock: clock, logger: logger, clockSynchronized: { true })

    var sc = MQTTConfiguration()
    sc.host = "127.0.0.1"
    sc.port = broker.port
    sc.clientID = "peripherals-bench-subscriber"
    let subscriber = MQTTClient(configuration: sc)
    let values = try subscriber.subscribe("bench/gw-b/peripherals/+/char/+", qos: .atLeastOnce)
    let health = try subscriber.subscribe("bench/gw-b/health", qos: .atMostOnce)
    let arrivals = PeripheralArrivals()

    let tasks = [
        Task { try await subscriber.run() },
        Task {
            for await m in values {
                let received = clock.unixTime()
                guard let ts = jsonNumber(m.payload, key: "\"ts\":") else { continue }
                arrivals.lock.withLock { arrivals.values.append((ts, received)) }
            }
        },
        Task { for await m in health { arrivals.lock.withLock { arrivals.health = m.payload } } },
        Task { try await simulator.run() },
        Task { try await runtime.run() },
    ]
    defer { for t in tasks { t.cancel() } }

    // Every peripheral connected and its values arriving, then a moment to settle.
    let node = simulator.nodes[0]
    let deadline = ContinuousClock.now + .seconds(60)
    while node.links.count < count || node.links.contains(where: { $0.notificationsSent == 0 })
        || arrivals.lock.withLock({ arrivals.values.count }) < count
    {
        guard ContinuousClock.now < deadline else {
            throw PeripheralsBenchError(message: "\(node.links.count) of \(count) peripherals connected after 60 s")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    try await Task.sleep(for: .seconds(2))

    func spoolDrops() -> Int {
        let d = runtime.spoolStatistics.drops[.sample] ?? DropCounters()
        return Int(d.droppedOldest + d.droppedInMemory + d.downsampled)
    }
    let start = (t: clock.unixTime(), stats: node.stats, spool: spoolDrops())
    try await Task.sleep(for: .seconds(window))
    let end = (t: clock.unixTime(), stats: node.stats, spool: spoolDrops())
    // The window's last values through the spool and the broker; then the health published after it.
    try await Task.sleep(for: .seconds(2))

    let seconds = end.t - start.t
    var r = PeripheralsResult()
    r.offered = Double(end.stats.notificationsSent - start.stats.notificationsSent) / seconds
    r.simDrops = end.stats.notificationsDropped - start.stats.notificationsDropped
    r.spoolDrops = end.spool - start.spool
    let inWindow = arrivals.lock.withLock { arrivals.values.filter { $0.ts >= start.t && $0.ts < end.t } }
    r.delivered = Double(inWindow.count) / seconds
    let latencies = inWindow.map { $0.received - $0.ts }.sorted()
    if !latencies.isEmpty {
        r.p50 = latencies[latencies.count / 2]
        r.p99 = latencies[Swift.min(latencies.count - 1, latencies.count * 99 / 100)]
        r.max = latencies[latencies.count - 1]
    }
    // Drops since the start of the run: the GATT client's and the bearers' (health), none expected before.
    let healthPayload = arrivals.lock.withLock { arrivals.health }
    if let range = healthPayload.firstRange(of: Array("\"peripherals\":".utf8)) {
        r.gattDrops = Int(jsonNumber(Array(healthPayload[range.lowerBound...]), key: "\"dropped_values\":") ?? -1)
    } else {
        r.gattDrops = -1
    }
    r.rss = residentBytes()

    for t in tasks { t.cancel() }
    for t in tasks { _ = await t.result }
    return r
}

/// The number after `key` in a JSON text (the gateway's own writer: no spaces), or nil.
private func jsonNumber(_ bytes: [UInt8], key: String) -> Double? {
    guard let range = bytes.firstRange(of: Array(key.utf8)) else { return nil }
    let number = bytes[range.upperBound...].prefix { "0123456789.-+eE".utf8.contains($0) }
    return Double(String(decoding: number, as: UTF8.self))
}

private struct PeripheralsBenchError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// This process's resident set (gateway, simulator and subscriber together), from /proc/self/statm.
private func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
