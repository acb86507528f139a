import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real three-node NATS cluster (`/usr/sbin/nats-server`, Debian's 2.9) on loopback, JetStream on and an MQTT
/// listener on each node: the clustered broker of the tests (docs/DEPLOY.md, "A cluster"). NATS keeps MQTT sessions,
/// retained messages and QoS 1 messages in JetStream streams replicated over the nodes, so any node serves a client
/// whose node died. It speaks MQTT 3.1.1 only.
///
/// Each node has its own directory (its configuration, log and JetStream store) and free ports, kept across a
/// restart. `start()` returns when every node listens for MQTT and the cluster has elected a JetStream metadata
/// leader (both read from the nodes' logs, not a connect loop); `kill(_:)` is a crash, `start(_:)` brings a node back
/// with its store.
public final class NatsCluster: @unchecked Sendable {
    public static let executable = "/usr/sbin/nats-server"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    public final class Node: @unchecked Sendable {
        public let name: String
        public let directory: URL
        public let clientPort: Int
        public let routePort: Int
        public let mqttPort: Int
        fileprivate var process: Process?
        fileprivate var exited: DispatchSemaphore?

        init(name: String, directory: URL) throws {
            self.name = name
            self.directory = directory
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            clientPort = try Loopback.freePort()
            routePort = try Loopback.freePort()
            mqttPort = try Loopback.freePort()
        }

        public var url: String { "mqtt://127.0.0.1:\(mqttPort)" }
        public var logPath: String { directory.appendingPathComponent("nats.log").path }
        public var isRunning: Bool { process?.isRunning ?? false }
    }

    public let directory: URL
    public let nodes: [Node]
    private let ownsDirectory: Bool

    /// Three nodes in `directory` (kept), or in a new temporary one (removed at deinit).
    public init(directory: URL? = nil, size: Int = 3) throws {
        let root =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "nats-\(getpid())-\(UUID().uuidString.prefix(8))")
        self.directory = root
        ownsDirectory = directory == nil
        nodes = try (1...size).map { try Node(name: "n\($0)", directory: root.appendingPathComponent("n\($0)")) }
    }

    deinit {
        for node in nodes { kill(node) }
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Every node's MQTT listener, in node order: a gateway's `mqtt.brokers`.
    public var urls: [String] { nodes.map(\.url) }

    /// Starts every node; returns once each listens for MQTT and a metadata leader is elected.
    public func start() throws {
        for node in nodes { try launch(node) }
        for node in nodes { try waitForLine(in: node, containing: "Listening for MQTT clients", limit: 15) }
        try waitForLeader(limit: 30)
        for node in nodes { try warm(node) }
    }

    /// A node serves MQTT only once its account's MQTT streams and consumers exist, which the first MQTT client of
    /// the cluster creates and each node then attaches to; until then it closes a client's connection. Nothing in
    /// the log says a node is ready, so a QoS 1 publish is made until one is acknowledged (bounded), through
    /// mosquitto_pub. Bounded at 60 s: a new cluster's first streams took more than 30 s once in a CI run.
    private func warm(_ node: Node) throws {
        let deadline = Date().addingTimeInterval(60)
        while true {
            let run = try ToolRun.run(
                "/usr/bin/mosquitto_pub",
                [
                    "-V", "mqttv311", "-h", "127.0.0.1", "-p", "\(node.mqttPort)", "-t", "nats-test/warm", "-m", "x",
                    "-q", "1",
                ])
            if run.status == 0 { return }
            guard Date() < deadline else {
                throw ToolFailure(message: "NATS cluster: \(node.name) took no MQTT publish within 60 s: \(run.output)")
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// Starts one node again (after `kill`), with its JetStream store; returns once it listens for MQTT and has
    /// joined the cluster's JetStream (it knows the metadata leader).
    public func start(_ node: Node) throws {
        let mark = (try? Data(contentsOf: URL(fileURLWithPath: node.logPath)).count) ?? 0
        try launch(node)
        try waitForLine(in: node, containing: "Listening for MQTT clients", after: mark, limit: 15)
        try waitForLine(in: node, containing: "metadata leader", after: mark, limit: 30)
    }

    /// SIGKILL: no goodbye to clients and nothing flushed, like a crashed node or a pulled power cord.
    public func kill(_ node: Node) {
        guard let process = node.process else { return }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        node.exited?.wait()
        process.waitUntilExit()
        node.process = nil
    }

    private func configuration(of node: Node) -> String {
        let routes = nodes.map { "nats://127.0.0.1:\($0.routePort)" }.joined(separator: ", ")
        return """
            server_name: \(node.name)
            listen: 127.0.0.1:\(node.clientPort)
            jetstream { store_dir: "\(node.directory.appendingPathComponent("jetstream").path)" }
            cluster {
              name: blegateway-test
              listen: 127.0.0.1:\(node.routePort)
              routes: [ \(routes) ]
            }
            mqtt { listen: 127.0.0.1:\(node.mqttPort) }

            """
    }

    private func launch(_ node: Node) throws {
        let config = node.directory.appendingPathComponent("nats.conf")
        try configuration(of: node).write(to: config, atomically: true, encoding: .utf8)
        let launched = try ServerLaunch.start(Self.executable, ["-c", config.path], logPath: node.logPath)
        let (process, log) = (launched.process, launched.log)
        // One reader owns the pipe for the node's life: it copies the log to the file and says when the pipe
        // ends, which is when the node has exited.
        let exited = DispatchSemaphore(value: 0)
        let reader = launched.output
        let lines = lineArrivals
        Thread.detachNewThread {
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                log.write(chunk)
                lines.signal()
            }
            try? log.close()
            lines.signal()
            exited.signal()
        }
        node.process = process
        node.exited = exited
    }

    /// Signalled whenever any node's log grows: what the waits below wait on.
    private let lineArrivals = Arrivals()

    private func waitForLine(in node: Node, containing needle: String, after mark: Int = 0, limit: Double) throws {
        try lineArrivals.wait(limit: limit, "\(node.name): \"\(needle)\" in its log") {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: node.logPath)), data.count > mark else {
                return false
            }
            return String(decoding: data[mark...], as: UTF8.self).contains(needle)
        }
    }

    private func waitForLeader(limit: Double) throws {
        try lineArrivals.wait(limit: limit, "a JetStream metadata leader") {
            nodes.contains { node in
                let text = (try? String(contentsOfFile: node.logPath, encoding: .utf8)) ?? ""
                return text.contains("new metadata leader") || text.contains("Self is new JetStream cluster metadata")
            }
        }
    }

    /// A condition re-checked each time a log grows, until it holds or `limit` seconds pass.
    private final class Arrivals: @unchecked Sendable {
        private let condition = NSCondition()
        private var generation = 0

        func signal() {
            condition.lock()
            generation += 1
            condition.broadcast()
            condition.unlock()
        }

        func wait(limit: Double, _ what: String, until holds: () -> Bool) throws {
            let deadline = Date().addingTimeInterval(limit)
            condition.lock()
            defer { condition.unlock() }
            while true {
                let seen = generation
                condition.unlock()
                let done = holds()
                condition.lock()
                if done { return }
                while generation == seen {
                    guard condition.wait(until: deadline) else {
                        throw ToolFailure(message: "NATS cluster: no \(what) within \(limit) s")
                    }
                }
            }
        }
    }
}
