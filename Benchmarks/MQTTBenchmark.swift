import BLEPublishing
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
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("c/mqtt_pub_bench.c")
    let binary = work.appendingPathComponent("mqtt_pub_bench").path
    _ = try benchRun("/usr/bin/cc", ["-O2", "-o", binary, source.path, "-lmosquitto", "-lpthread"])

    let broker = try BenchBroker(directory: work)
    defer { broker.kill() }

    print("MQTT publish throughput: \(messages) messages of \(size) bytes, window \(window), best of \(rounds)")
    print("qos  C libmosquitto msgs/s  Swift MQTTClient msgs/s  ratio")
    for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
        var bestC = 0.0
        var bestSwift = 0.0
        for _ in 0..<rounds {
            let output = try benchRun(binary, ["127.0.0.1", "\(broker.port)", "\(messages)", "\(qos.rawValue)",
                                               "\(size)", "\(window)"])
            let value = output.split(separator: "=").last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            bestC = max(bestC, value ?? 0)
            bestSwift = max(bestSwift, try await swiftThroughput(port: broker.port, messages: messages, qos: qos,
                                                                  size: size, window: window))
        }
        let ratio = bestC > 0 ? bestSwift / bestC : 0
        print(String(format: "%-4d %22.0f  %23.0f  %4.0f %%", qos.rawValue, bestC, bestSwift, ratio * 100))
    }
}

/// Messages per second through `MQTTClient.publish`: `window` tasks each publishing in turn, so at most `window`
/// publishes await their acknowledgement, like the spool's window.
private func swiftThroughput(port: Int, messages: Int, qos: MQTTQoS, size: Int, window: Int) async throws -> Double {
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
        let elapsed = (ContinuousClock.now - start)
        group.cancelAll()
        try await group.waitForAll()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Double(messages) / seconds
    }
}

/// A mosquitto on a free loopback port for the benchmark (the tests have a fuller one in
/// Tests/BLEPublishingTests/Support/MosquittoBroker.swift; test code cannot be imported here).
final class BenchBroker {
    let port: Int
    private let process = Process()

    init(directory: URL) throws {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
        }
        close(probe)
        port = Int(UInt16(bigEndian: address.sin_port))
        let config = directory.appendingPathComponent("mosquitto.conf")
        var lines = ["listener \(port) 127.0.0.1", "allow_anonymous true", "persistence false"]
        if getuid() == 0 { lines.append("user root") }
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", config.path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var target = address
            let ok = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if ok { return }
            usleep(10_000)
        }
        kill()
        throw BenchError(message: "mosquitto did not listen on \(port)")
    }

    func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
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
