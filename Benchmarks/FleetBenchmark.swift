import BLEFleet
import BLEPublishing
import BLETestSupport
import Foundation

/// The fleet service under a synthetic fleet on loopback: `--gateways` × `--beacons` beacon readings a second (by
/// default 1,000 × 50 = 50,000 messages/s) published at QoS 0 into one mosquitto, read by one `blegateway fleet`
/// process (the release binary beside this one) for `--seconds`. Reports the service's CPU (from /proc), peak RSS,
/// whether it kept up (messages it counted against messages published, and how long it took to drain after the
/// publisher stopped), and the dashboard's latency broker → page event: a probe gateway's status carries its send
/// time, and a Server-Sent Events client on that gateway's page (curl) notes when each one arrives.
///
/// With `--nats`, through a three-node NATS cluster instead (Debian's nats-server, as `NatsCluster` starts it for the
/// tests): the publisher on the first node, the service on the second, both under MQTT 3.1.1 (all NATS speaks), so
/// every message crosses the cluster's routes.
///
/// usage: blegateway-bench fleet -- --gateways 1000 --beacons 50 --seconds 30 [--nats]
func runFleetBenchmark(arguments: [String]) async throws {
    let gateways = benchmarkOption(arguments, "--gateways", 1000)
    let beacons = benchmarkOption(arguments, "--beacons", 50)
    let seconds = benchmarkOption(arguments, "--seconds", 30)
    let perSecond = gateways * beacons
    foldCost(gateways: gateways, beacons: beacons)

    let work = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-bench-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let nats = arguments.contains("--nats")
    var cluster: NatsCluster?
    var mosquitto: Mosquitto?
    let (publisherPort, servicePort): (Int, Int)
    if nats {
        let c = try NatsCluster(directory: work.appendingPathComponent("nats"))
        try c.start()
        cluster = c
        (publisherPort, servicePort) = (c.nodes[0].mqttPort, c.nodes[1].mqttPort)
        print("through a three-node NATS cluster (nats-server 2.9): publisher on n1, service on n2, MQTT 3.1.1")
    } else {
        let m = try benchBroker(directory: work)
        mosquitto = m
        (publisherPort, servicePort) = (m.port, m.port)
    }
    defer {
        mosquitto?.kill()
        if let cluster { for node in cluster.nodes { cluster.kill(node) } }
    }

    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("blegateway").path
    let http = try Loopback.freePort()
    let fleet = Process()
    fleet.executableURL = URL(fileURLWithPath: binary)
    fleet.arguments =
        [
            "fleet", "--broker", "mqtt://127.0.0.1:\(servicePort)", "--prefix", "bench",
            "--listen", "127.0.0.1:\(http)", "--history", work.appendingPathComponent("h.sqlite").path,
        ] + (nats ? ["--mqtt-protocol", "3"] : [])
    fleet.standardOutput = FileHandle.nullDevice
    fleet.standardError = FileHandle.nullDevice
    try fleet.run()
    defer {
        if fleet.isRunning {
            kill(fleet.processIdentifier, SIGKILL)
            fleet.waitUntilExit()
        }
    }
    try fleetBenchWaitListening(port: http)

    let probe = FleetProbe(url: "http://127.0.0.1:\(http)/events/gateway/probe", seconds: seconds + 30)

    var configuration = MQTTConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = publisherPort
    if nats { configuration.protocolVersion = .v311 }
    configuration.clientID = "fleet-bench-publisher"
    configuration.maxInFlight = 1024
    let client = MQTTClient(configuration: configuration)
    print(
        "fleet service: \(gateways) gateways × \(beacons) beacons at 1 Hz = \(perSecond) messages/s"
            + " for \(seconds) s")

    let (published, failed, cpuSeconds, wall) = try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run() }
        for await event in client.events { if case .connected = event { break } }
        let cpuStart = processCPUSeconds(fleet.processIdentifier)
        let start = ContinuousClock.now
        var published = 0
        var failed = 0
        let ticksPerSecond = 10
        for tick in 0..<(seconds * ticksPerSecond) {
            // This tick's share of every gateway's beacons, so each beacon is published once a second.
            let first = (tick % ticksPerSecond) * beacons / ticksPerSecond
            let last = ((tick % ticksPerSecond) + 1) * beacons / ticksPerSecond
            let seq = tick / ticksPerSecond * beacons
            let (ok, bad) = await publishTick(client, gateways: gateways, beacons: first..<last, seqBase: seq)
            published += ok
            failed += bad
            if tick % ticksPerSecond == 0 {
                let sent = Date().timeIntervalSince1970
                let status =
                    #"{"run":"probe","seq":null,"ts":\#(sent),"clock_synced":true,"state":"online","#
                    + #""gateway":"probe","version":"bench","started":\#(sent)}"#
                _ = try? await client.publish(
                    MQTTMessage(
                        topic: "bench/probe/status", payload: Array(status.utf8),
                        qos: .atMostOnce))
                published += 1
            }
            try await Task.sleep(until: start + .milliseconds(100 * (tick + 1)), clock: .continuous)
        }
        let wall = (ContinuousClock.now - start)
        let cpu = processCPUSeconds(fleet.processIdentifier) - cpuStart
        group.cancelAll()
        return (published, failed, cpu, Double(wall.components.seconds) + Double(wall.components.attoseconds) * 1e-18)
    }

    // Drained: the service's own count of messages (its /metrics) reaches what was published.
    let drainStart = ContinuousClock.now
    var counted = 0
    while ContinuousClock.now - drainStart < .seconds(20) {
        counted = fleetMessagesCounted(port: http)
        if counted >= published { break }
        try await Task.sleep(for: .milliseconds(100))
    }
    let drain = ContinuousClock.now - drainStart
    let rss = peakRSS(fleet.processIdentifier)
    let lost = fleetMetric("blegateway_fleet_dropped_messages_total", port: http)
    let latencies = probe.finish().sorted()

    print(
        String(
            format: "published %d (%d refused by the client) in %.1f s = %.0f msg/s", published, failed, wall,
            Double(published) / wall))
    print(
        String(
            format: "service counted %d (%.2f %%), drained %@ after the publisher stopped", counted,
            100 * Double(counted) / Double(max(published, 1)),
            counted >= published ? "\(drain)" : "NOT (gave up after 20 s)"))
    print("messages the service lost because it fell behind (its own count): \(lost)")
    print(
        String(
            format: "service CPU %.1f s in %.1f s = %.0f %% of one core; peak RSS %.0f MB", cpuSeconds, wall,
            100 * cpuSeconds / wall, Double(rss) / 1e6))
    if latencies.isEmpty {
        print("broker → page event latency: no probe event arrived")
    } else {
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(
            String(
                format: "broker → page event latency (%d probes): p50 %.0f ms, p99 %.0f ms, max %.0f ms",
                latencies.count, pct(0.5) * 1000, pct(0.99) * 1000, latencies.last! * 1000))
    }
}

/// The model's own cost, without broker or HTTP: one thread folding a second of the synthetic fleet's beacon
/// readings, in thread CPU time.
private func foldCost(gateways: Int, beacons: Int) {
    var model = FleetModel(prefix: "bench")
    var messages: [(String, [UInt8])] = []
    for g in 0..<min(gateways, 200) {
        for b in 0..<beacons {
            let id = String(format: "mac-%06x%06x", g, b)
            let payload =
                #"{"run":"r\#(g)","seq":\#(b + 1),"ts":1795243048.0,"clock_synced":true,"#
                + #""id":"\#(id)","kind":"other","address":"C4:BB:CA:D0:7F:7D","rssi":-60.5,"#
                + #""samples":9,"interval_s":1,"distance_m":2.5,"accuracy_m":0.5,"proximity":"near"}"#
            messages.append(("bench/gw-\(g)/beacons/\(id)", Array(payload.utf8)))
        }
    }
    let rounds = 5
    let start = threadCPUSeconds()
    for r in 0..<rounds {
        for (topic, payload) in messages {
            model.receive(topic: topic, payload: payload, retained: false, now: Double(r))
        }
    }
    let perMessage = (threadCPUSeconds() - start) / Double(rounds * messages.count)
    print(
        String(
            format: "model fold alone: %.1f µs CPU per beacon reading (%.0f readings/s on one core), %d gateways",
            perMessage * 1e6, 1 / perMessage, model.gateways.count))
}

private func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
}

/// Publishes one tick's readings, 64 publishers at a time (QoS 0: done when written to the socket).
private func publishTick(_ client: MQTTClient, gateways: Int, beacons: Range<Int>, seqBase: Int) async -> (Int, Int) {
    let workers = 64
    return await withTaskGroup(of: (Int, Int).self) { group in
        for w in 0..<workers {
            group.addTask {
                var ok = 0
                var bad = 0
                var g = w
                while g < gateways {
                    for b in beacons {
                        let id = String(format: "mac-%06x%06x", g, b)
                        let now = Date().timeIntervalSince1970
                        let payload =
                            #"{"run":"r\#(g)","seq":\#(seqBase + b + 1),"ts":\#(now),"clock_synced":true,"#
                            + #""id":"\#(id)","kind":"other","address":"C4:BB:CA:D0:7F:7D","rssi":\#(-50 - b % 40),"#
                            + #""samples":9,"interval_s":1,"distance_m":2.5,"accuracy_m":0.5,"proximity":"near"}"#
                        do {
                            try await client.publish(
                                MQTTMessage(
                                    topic: "bench/gw-\(g)/beacons/\(id)",
                                    payload: Array(payload.utf8), qos: .atMostOnce))
                            ok += 1
                        } catch {
                            bad += 1
                        }
                    }
                    g += workers
                }
                return (ok, bad)
            }
        }
        var total = (0, 0)
        for await r in group {
            total.0 += r.0
            total.1 += r.1
        }
        return total
    }
}

/// Follows the probe gateway's page over Server-Sent Events (curl -N on a thread of its own) and records, for each
/// new `since` (the probe's send time), how long after sending the page's event arrived.
private final class FleetProbe: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var latencies: [Double] = []
    private var done = DispatchSemaphore(value: 0)

    init(url: String, seconds: Int) {
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sN", "--max-time", String(seconds), url]
        process.standardOutput = pipe
        try? process.run()
        Thread.detachNewThread { [self] in
            var buffer = Data()
            var last = 0.0
            while true {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let r = buffer.range(of: Data("\n\n".utf8)) {
                    let line = buffer[..<r.lowerBound]
                    buffer.removeSubrange(..<r.upperBound)
                    let arrived = Date().timeIntervalSince1970
                    guard let json = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6))) as? [String: Any],
                        let g = json["gateway"] as? [String: Any], let since = g["since"] as? Double, since > last
                    else { continue }
                    last = since
                    lock.withLock { latencies.append(arrived - since) }
                }
            }
            done.signal()
        }
    }

    func finish() -> [Double] {
        process.terminate()
        done.wait()
        return lock.withLock { latencies }
    }
}

func processCPUSeconds(_ pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // Fields 14 and 15 (utime, stime) in clock ticks; after the ")" they are the 12th and 13th.
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

private func peakRSS(_ pid: Int32) -> Int { processMemory(pid, "VmHWM") }

/// One memory figure of /proc/PID/status (`VmRSS`, `VmHWM`, …) in bytes; 0 when the process is gone.
func processMemory(_ pid: Int32, _ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
        let kb = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kb * 1024
}

/// `blegateway_fleet_messages_total` from the service's /metrics.
private func fleetMessagesCounted(port: Int) -> Int { fleetMetric("blegateway_fleet_messages_total", port: port) }

/// One unlabelled sample from the service's /metrics.
private func fleetMetric(_ name: String, port: Int) -> Int {
    let p = Process()
    let out = Pipe()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    p.arguments = ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"]
    p.standardOutput = out
    guard (try? p.run()) != nil else { return 0 }
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
    return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
}

private func fleetBenchWaitListening(port: Int) throws {
    for _ in 0..<500 {
        if Loopback.accepts(port: port) { return }
        usleep(10_000)
    }
    throw CocoaError(.fileReadUnknown)
}
