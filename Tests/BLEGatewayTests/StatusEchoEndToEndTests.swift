import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// MQTT 3.1.1 and an ACL that denies the gateway's status: mosquitto acknowledges each denied publish as if
    /// delivered, so nothing can keep those readings; the gateway notices that its own online status never comes back
    /// and says so on its health topic (which the ACL lets through). With the status allowed, it says nothing.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct StatusEchoEndToEndTests {
        @Test(arguments: [true, false])
        func underMQTT311AGatewayWhoseStatusIsDeniedSaysSoInItsHealth(statusDenied: Bool) async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("echo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let prefix = "echo\(UInt32.random(in: 0...UInt32.max))"
            // Anonymous clients (the gateway and the observer) read everything; the gateway may write its health
            // (and, in the control run, its status).
            let acl =
                "topic read #\ntopic write \(prefix)/gw-echo/health\n"
                + (statusDenied ? "" : "topic write \(prefix)/gw-echo/status\n")
            try acl.write(to: dir.appendingPathComponent("acl"), atomically: true, encoding: .utf8)
            let broker = try Mosquitto(
                directory: dir, configuration: ["acl_file \(dir.appendingPathComponent("acl").path)"])
            try broker.start()
            defer { broker.terminate(limit: .seconds(5)) }
            let port = broker.port

            let observer = try Observer(port: port, filter: "\(prefix)/gw-echo/health")
            defer { observer.stop() }
            var c = GatewayConfiguration()
            c.gateway.id = "gw-echo"
            c.mqtt.broker = "mqtt://127.0.0.1:\(port)"
            c.mqtt.prefix = prefix
            c.mqtt.protocolVersion = 3
            c.spool.path = dir.appendingPathComponent("spool.sqlite").path
            c.publishing.healthIntervalSeconds = 1
            c.remoteConfig.enabled = false
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            source.lock.withLock { source.runtime = runtime }
            let task = Task { try await runtime.run() }
            defer { task.cancel() }

            func suspected() -> [Bool] {
                observer.states("\(prefix)/gw-echo/health").compactMap {
                    ($0["publish"] as? [String: Any])?["denied_suspected"] as? Bool
                }
            }
            // The wait after the CONNACK is 10 s; health every second.
            let limit = GatewayRuntime.statusEchoWait + .seconds(15)
            if statusDenied {
                try await EndToEndSuites.waitFor("denied_suspected", limit: limit) { suspected().last == true }
                #expect(suspected().first == false, "nothing is suspected before the wait is over")
            } else {
                try await EndToEndSuites.waitFor("a health report after the wait", limit: limit) {
                    observer.states("\(prefix)/gw-echo/health").contains { ($0["uptime_s"] as? Double ?? 0) > 12 }
                }
                #expect(!suspected().isEmpty && suspected().allSatisfy { !$0 }, "\(suspected())")
            }
            task.cancel()
            _ = try? await task.value
        }
    }
}
