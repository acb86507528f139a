import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// The gateway is not tied to mosquitto: the retained-config round trip against a second implementation, amqtt
/// (Python, PyPI; `make test` keeps it in /var/cache/blegateway-amqtt-venv). amqtt speaks MQTT 3.1.1 only (it
/// closes an MQTT 5 connection), so the gateway and the operator use 3.1.1 here. What differs from mosquitto is in
/// docs/DEPLOY.md, "Brokers".
enum Amqtt {
    static let executable = "/var/cache/blegateway-amqtt-venv/bin/amqtt"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// amqtt on a free port of 127.0.0.1, anonymous clients allowed, its configuration and log in `directory`;
    /// returns once it accepts connections.
    /// With `sessions`, its session database (`SessionDBPlugin`, kept across a clean shutdown) in that file; `port`
    /// to start it again where it was.
    static func start(in directory: URL, port: Int? = nil, sessions: URL? = nil) async throws -> (
        child: Child, port: Int
    ) {
        let port = try port ?? Loopback.freePort()
        var configuration = """
            listeners:
              default:
                type: tcp
                bind: 127.0.0.1:\(port)
            plugins:
              amqtt.plugins.authentication.AnonymousAuthPlugin:
                allow_anonymous: true

            """
        if let sessions {
            configuration += """
                  amqtt.contrib.persistence.SessionDBPlugin:
                    file: \(sessions.path)
                    clear_on_shutdown: false

                """
        }
        try configuration.write(to: directory.appendingPathComponent("amqtt.yaml"), atomically: true, encoding: .utf8)
        let child = try Child.unmasked(
            executable, ["-c", directory.appendingPathComponent("amqtt.yaml").path],
            log: directory.appendingPathComponent("amqtt.log").path)
        try await EndToEndSuites.waitFor("amqtt", limit: .seconds(20)) {
            Loopback.accepts(port: port)
        }
        return (child, port)
    }
}

extension EndToEndSuites {
    @Suite(
        .enabled(if: TestDependency.runs(Amqtt.isAvailable), "needs amqtt (make amqtt-venv)"), .timeLimit(.minutes(2)),
        .serialized)
    struct SecondBrokerTests {
        @Test func aRetainedConfigAppliesReportsAndIsInForceAgainAtTheNextStartUnderAmqtt() async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("amqtt-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let (broker, port) = try await Amqtt.start(in: dir)
            defer { broker.stop(SIGTERM, limit: .seconds(5)) }

            let prefix = "amqtt\(UInt32.random(in: 0...UInt32.max))"
            let observer = try Observer(port: port, filter: "\(prefix)/#", protocolVersion: .v311)
            defer { observer.stop() }
            var c = GatewayConfiguration()
            c.gateway.id = "gw-a"
            c.mqtt.broker = "mqtt://127.0.0.1:\(port)"
            c.mqtt.prefix = prefix
            c.mqtt.protocolVersion = 3
            c.mqtt.reconnectMinSeconds = 0.1
            c.mqtt.reconnectMaxSeconds = 0.5
            c.spool.path = dir.appendingPathComponent("spool.sqlite").path
            c.publishing.rangingIntervalSeconds = 0.2
            let stateTopic = "\(prefix)/gw-a/config/state"
            func start() throws -> (GatewayRuntime, Source, Task<Void, Error>) {
                let source = Source()
                let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
                source.lock.withLock { source.runtime = runtime }
                return (runtime, source, Task { try await runtime.run() })
            }

            // Mid-run: the operator's retained document applies and the verdict comes back. (In a scope of its own:
            // the runtime holds the spool until it is gone.)
            do {
                let (runtime, _, task) = try start()
                try await EndToEndSuites.waitFor("readings flowing", limit: .seconds(20)) {
                    observer.beacons(after: 0).count >= 4
                }
                try await observer.publish(
                    "\(prefix)/gw-a/config",
                    Array(#"{"version": 4, "scan": {"filters": ["name:A"]}}"#.utf8))
                try await EndToEndSuites.waitFor("the verdict", limit: .seconds(20)) {
                    observer.states(stateTopic).contains {
                        $0["version"] as? Int == 4 && $0["status"] as? String == "applied"
                    }
                }
                #expect(runtime.effectiveConfiguration.scan.filters == ["name:A"])
                task.cancel()
                _ = try? await task.value
            }

            // The next start: the retained document comes from amqtt before the first scan.
            let (_, source, again) = try start()
            try await EndToEndSuites.waitFor("first scan", limit: .seconds(20)) {
                source.lock.withLock { source.configurationAtStart != nil }
            }
            #expect(source.lock.withLock { source.configurationAtStart }?.scan.filters == ["name:A"])
            again.cancel()
            _ = try? await again.value
            // Nothing the broker acknowledged went missing on the way (3.1.1: acknowledged means delivered here).
            #expect(EndToEndSuites.gaps(observer.seqs) == [])
        }
    }
}
