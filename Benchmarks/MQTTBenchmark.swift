import BLEPublishing
import BLETestSupport
import Foundation

/// Publish throughput of `MQTTClient` against libmosquitto used directly from C (Benchmarks/c/mqtt_pub_bench.c,
/// compiled here with `cc … -lmosquitto`), both against one mosquitto started on a free loopback port, in the
/// same run: N messages of ~150 bytes at QoS 0 and QoS 1, at most `window` awaiting completion on each side.
///
/// usage: runMQTTBenchmark(arguments: ["--messages", "20000", "--window", "64", "--size", "150", "--rounds", "3"])
func runMQTTBenchmark(arguments: [String]) async throws {
    func option(_ name: String, _ fallback: Int) -> Int { benchmarkOption(arguments, name, fallback) }
    let messages = option("--messages", 20_000)
    let window = option("--window", 64)
    let size = option("--size", 150)
    let rounds = option("--rounds", 3)

    let work = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-bench-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let binary = try compileCPublisher(into: work)

    let broker = try benchBroker(directory: work)
    defer { broker.kill() }

    print("MQTT publish throughput: \(messages) messages of \(size) bytes, window \(window), best of \(rounds)")
    // Two ways to drive the Swift client: `submit` with a completion, in order, as the spool's publisher does (the
    // gateway's path), and `publish` awaited by `window` concurrent tasks (one task switch per message each way).
    print("qos  C libmosquitto msgs/s  Swift submit msgs/s  ratio  Swift publish msgs/s  ratio")
    for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
        var bestC = 0.0
        var bestSubmit = 0.0
        var bestSwift = 0.0
        for _ in 0..<rounds {
            bestC = max(
                bestC,
                try cPublishRate(
                    binary, port: broker.port, messages: messages, qos: qos, size: size,
                    window: window))
            bestSubmit = max(
                bestSubmit,
                try await swiftThroughput(
                    port: broker.port, messages: messages, qos: qos,
                    size: size, window: window, submitting: true))
            bestSwift = max(
                bestSwift,
                try await swiftThroughput(
                    port: broker.port, messages: messages, qos: qos,
                    size: size, window: window, submitting: false))
        }
        func ratio(_ x: Double) -> Double { bestC > 0 ? x / bestC * 100 : 0 }
        print(
            String(
                format: "%-4d %22.0f  %19.0f  %4.0f %%  %20.0f  %4.0f %%", qos.rawValue, bestC, bestSubmit,
                ratio(bestSubmit), bestSwift, ratio(bestSwift)))
    }
}

/// Messages per second through `MQTTClient.publish`: `window` tasks each publishing in turn, so at most `window`
/// publishes await their acknowledgement, like the spool's window.
/// The C baseline (Benchmarks/c/mqtt_pub_bench.c), compiled into `directory`; returns the binary's path.
func compileCPublisher(into directory: URL) throws -> String {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "c/mqtt_pub_bench.c")
    let binary = directory.appendingPathComponent("mqtt_pub_bench").path
    _ = try benchRun("/usr/bin/cc", ["-O2", "-o", binary, source.path, "-lmosquitto", "-lpthread"])
    return binary
}

/// Messages per second libmosquitto driven from C publishes (and, at QoS 1, has acknowledged) through `window`.
func cPublishRate(_ binary: String, port: Int, messages: Int, qos: MQTTQoS, size: Int, window: Int) throws -> Double {
    let output = try benchRun(
        binary, ["127.0.0.1", "\(port)", "\(messages)", "\(qos.rawValue)", "\(size)", "\(window)"])
    return output.split(separator: "=").last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
}

/// At most `window` submitted and unresolved. The submitting loop takes free slots in batches and, when there are
/// none, waits on a continuation that the completions resume once half the window is free again — as the spool's
/// publisher refills its window in batches, so a message costs no task switch of its own.
private final class SubmitWindow: @unchecked Sendable {
    private let lock = NSLock()
    private let window: Int
    private var open: Int
    private var resolved = 0
    private var failure: MQTTError?
    private var waiter: CheckedContinuation<Void, Never>?
    /// What the waiter waits for: free slots (0: half the window) or this many resolved in all.
    private var awaitedResolved = 0

    init(_ window: Int) {
        self.window = window
        open = window
    }

    private var satisfied: Bool {
        failure != nil || (awaitedResolved > 0 ? resolved >= awaitedResolved : open >= max(1, window / 2))
    }

    /// Free slots taken for submitting (at least one); waits while there are none.
    func take() async throws(MQTTError) -> Int {
        let ready = lock.withLock { () -> Bool in
            awaitedResolved = 0
            return open > 0 || failure != nil
        }
        if !ready { await wait() }
        let (free, failed) = lock.withLock { () -> (Int, MQTTError?) in
            defer { open = 0 }
            return (open, failure)
        }
        if let failed { throw failed }
        return free
    }

    /// Waits until `count` messages are resolved in all.
    func awaitResolved(_ count: Int) async throws(MQTTError) {
        let done = lock.withLock { () -> Bool in
            awaitedResolved = count
            return resolved >= count || failure != nil
        }
        if !done { await wait() }
        if let failure = lock.withLock({ failure }) { throw failure }
    }

    private func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            if satisfied {
                lock.unlock()
                c.resume()
            } else {
                waiter = c
                lock.unlock()
            }
        }
    }

    func complete(_ result: Result<MQTTPublishID, MQTTError>) {
        lock.lock()
        open += 1
        resolved += 1
        if case .failure(let e) = result { failure = e }
        var resume: CheckedContinuation<Void, Never>?
        if waiter != nil, satisfied {
            resume = waiter
            waiter = nil
        }
        lock.unlock()
        resume?.resume()
    }
}

private func swiftThroughput(
    port: Int, messages: Int, qos: MQTTQoS, size: Int, window: Int,
    submitting: Bool
) async throws -> Double {
    var configuration = MQTTConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = port
    configuration.clientID = "swift-bench"
    configuration.maxInFlight = window
    let client = MQTTClient(configuration: configuration)
    let payload = [UInt8](repeating: 0x78, count: size)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run() }
        for await event in client.events {
            if case .connected = event { break }
            if case .connectionFailed(let error) = event { throw error }
        }
        let start = ContinuousClock.now
        if submitting {
            let gate = SubmitWindow(window)
            var sent = 0
            while sent < messages {
                for _ in 0..<min(try await gate.take(), messages - sent) {
                    client.submit(MQTTMessage(topic: "bench/swift", payload: payload, qos: qos)) { gate.complete($0) }
                    sent += 1
                }
            }
            try await gate.awaitResolved(messages)
        } else {
            try await withThrowingTaskGroup(of: Void.self) { publishers in
                for worker in 0..<window {
                    publishers.addTask {
                        var i = worker
                        while i < messages {
                            try await client.publish(MQTTMessage(topic: "bench/swift", payload: payload, qos: qos))
                            i += window
                        }
                    }
                }
                try await publishers.waitForAll()
            }
        }
        let elapsed = (ContinuousClock.now - start)
        group.cancelAll()
        try await group.waitForAll()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Double(messages) / seconds
    }
}

/// The tests' mosquitto harness, quiet: a log line per message would cost the broker more than the client measured.
func benchBroker(directory: URL) throws -> Mosquitto {
    let broker = try Mosquitto(directory: directory)
    broker.verbose = false
    try broker.start()
    return broker
}

private struct BenchError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

private func benchRun(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchError(message: "\(executable) exited with \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}
