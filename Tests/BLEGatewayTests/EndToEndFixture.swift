import BLEDomain
import BLEHCI
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import ServiceLifecycle

@testable import BLEConfiguration
@testable import BLEGateway

/// The end-to-end fixture the suites share: a gateway running in this process over a scripted source, a real
/// mosquitto (`Mosquitto`, persistent), and an observer of every message under the gateway's topics.
extension EndToEndSuites {
    /// Two beacons, named "A" and "B", each heard every 10 ms. Notes the configuration in force when it starts.
    final class Source: SightingSource, @unchecked Sendable {
        let lock = NSLock()
        weak var runtime: GatewayRuntime?  // weak: the runtime owns the source
        var configurationAtStart: GatewayConfiguration?
        var counters: SightingSourceCounters { SightingSourceCounters() }

        func run(
            adapter: @escaping @Sendable (AdapterReport) -> Void,
            sighting: @escaping @Sendable (Sighting) -> Void
        ) async throws {
            lock.withLock { configurationAtStart = runtime?.effectiveConfiguration }
            adapter(AdapterReport(state: .poweredOn, device: "test", mode: .exclusive))
            while !Task.isCancelled {
                for (n, name) in ["A", "B"].enumerated() {
                    let ad: [UInt8] = [0x02, 0x01, 0x06, 0x02, 0x09, UInt8(ascii: name == "A" ? "A" : "B")]
                    sighting(
                        Sighting(
                            address: BDAddress(rawValue: 0xC0FF_EE00 + UInt64(n)), addressType: .random,
                            rssi: -60, txPower: nil, timestamp: 0, isConnectable: false, isScanResponse: false,
                            advertisement: Advertisement(decoding: ad[...])))
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw CancellationError()
        }
    }

    /// Every message under the gateway's topics, through a persistent session opened before the gateway starts.
    final class Observer: @unchecked Sendable {
        let client: MQTTClient
        let lock = NSLock()
        var messages: [(topic: String, json: [String: Any])] = []
        var runner: Task<Void, Error>?
        var task: Task<Void, Never>?

        init(port: Int, filter: String, protocolVersion: MQTTProtocolVersion = .v5) throws {
            var c = MQTTConfiguration()
            c.host = "127.0.0.1"
            c.port = port
            c.protocolVersion = protocolVersion
            c.clientID = "rc-observer-\(UUID().uuidString.prefix(8))"
            c.reconnect = .init(minDelay: .milliseconds(50), maxDelay: .milliseconds(300), jitter: 0)
            client = MQTTClient(configuration: c)
            let stream = try client.subscribe(filter, qos: .atLeastOnce)
            runner = Task { try await client.run() }
            task = Task {
                for await m in stream {
                    guard let json = (try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any] else {
                        continue
                    }
                    self.lock.withLock { self.messages.append((m.topic, json)) }
                }
            }
        }

        func states(_ topic: String) -> [[String: Any]] {
            lock.withLock { messages.filter { $0.topic == topic }.map(\.json) }
        }
        var seqs: [Int] { lock.withLock { messages.compactMap { $0.json["seq"] as? Int } } }
        /// The gateway's offline status of a clean stop: its last reading, published after every one before it.
        var sawShutdown: Bool {
            lock.withLock {
                messages.contains { $0.topic.hasSuffix("/status") && $0.json["reason"] as? String == "shutdown" }
            }
        }
        func beacons(after seq: Int) -> [[String: Any]] {
            lock.withLock {
                messages.filter { $0.topic.contains("/beacons/") && ($0.json["seq"] as? Int ?? 0) > seq }.map(\.json)
            }
        }

        /// Publishes as an operator would (`blegateway config push`), once the observer is connected.
        func publish(_ topic: String, _ payload: [UInt8]) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                do {
                    try await client.publish(
                        MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: true))
                    return
                } catch let e as MQTTError where e.kind == .notConnected && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }

        func stop() {
            runner?.cancel()
            task?.cancel()
        }
    }

    struct Fixture {
        let directory: URL
        let broker: Mosquitto
        let prefix = "rc\(UInt32.random(in: 0...UInt32.max))"
        let gateway = "gw-rc"
        var stateTopic: String { "\(prefix)/\(gateway)/config/state" }
        var configTopic: String { "\(prefix)/\(gateway)/config" }
        var fleetTopic: String { "\(prefix)/fleet/config" }

        /// - Parameter acl: the broker's ACL file's text (anonymous clients) for this fixture's prefix, changed later with
        ///   `setACL`.
        init(acl: ((_ prefix: String) -> String)? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rc-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var settings: [String] = []
            if let acl {
                try acl(prefix).write(to: directory.appendingPathComponent("acl"), atomically: true, encoding: .utf8)
                settings.append("acl_file \(directory.appendingPathComponent("acl").path)")
            }
            broker = try Mosquitto(directory: directory, persistence: true, configuration: settings)
            try broker.start()
        }

        /// Replaces the broker's ACL and makes it read it again.
        func setACL(_ text: String) throws {
            try text.write(to: directory.appendingPathComponent("acl"), atomically: true, encoding: .utf8)
            broker.reload()
        }

        func configuration() -> GatewayConfiguration {
            var c = GatewayConfiguration()
            c.gateway.id = gateway
            c.mqtt.broker = broker.url
            c.mqtt.prefix = prefix
            c.mqtt.reconnectMinSeconds = 0.1
            c.mqtt.reconnectMaxSeconds = 0.5
            c.spool.path = directory.appendingPathComponent("spool.sqlite").path
            c.publishing.rangingIntervalSeconds = 0.2
            return c
        }

        func start(_ c: GatewayConfiguration) throws -> (GatewayRuntime, Source, Task<Void, Error>) {
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            source.lock.withLock { source.runtime = runtime }
            return (runtime, source, Task { try await runtime.run() })
        }

        /// `start`, under a ServiceGroup as `blegateway run` has it, so the test can stop the gateway as SIGTERM does.
        func startStoppable(_ c: GatewayConfiguration) throws -> (GatewayRuntime, Source, GracefulRun) {
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            source.lock.withLock { source.runtime = runtime }
            return (runtime, source, GracefulRun(runtime))
        }
    }

    /// A gateway runtime under its service group. `stop()` is SIGTERM's path, not cancellation's: scanning stops, the
    /// last readings flush, the spool drains to the broker and the offline status (reason "shutdown") goes last; so a
    /// test that has seen that status has seen every reading before it, with nothing left to wait for by time.
    struct GracefulRun {
        let group: ServiceGroup
        let task: Task<Void, Error>

        init(_ runtime: GatewayRuntime) {
            let group = ServiceGroup(
                configuration: .init(services: [runtime], logger: Logger(label: "end-to-end")))
            self.group = group
            task = Task { try await group.run() }
        }

        func stop() async {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        }
    }

    static func waitFor(_ what: String, limit: Duration = .seconds(10), _ done: () -> Bool) async throws {
        try await waitUntil(what, limit: limit) { done() }
    }

    /// No gaps in `seq` from the first to the last received (QoS 1 duplicates allowed).
    static func gaps(_ seqs: [Int]) -> [Int] {
        let set = Set(seqs)
        guard let lo = set.min(), let hi = set.max() else { return [] }
        return (lo...hi).filter { !set.contains($0) }
    }
}

extension EndToEndSuites.Fixture {
    /// The simulator running `yaml` with its sockets in this fixture's directory, on a clock `factor` times real time,
    /// for up to 600 s of virtual time, paced in 20 ms batches (the sensor, proxy and shared-sensor suites' world).
    func simulator(_ yaml: String, factor: Double) throws -> (Scenario, Simulator, ScaledClock) {
        let scenario = try ScenarioLoader.parse(yaml)
        let clock = ScaledClock(factor: factor)
        var options = SimulatorOptions(socketDirectory: directory.appendingPathComponent("sim").path)
        options.duration = 600
        let simulator = try Simulator(
            scenario: scenario, options: options, clock: clock, pacing: .clock(batch: .milliseconds(20)))
        return (scenario, simulator, clock)
    }
}
