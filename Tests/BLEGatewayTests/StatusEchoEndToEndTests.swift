import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// MQTT 3.1.1 and an ACL that denies one family of the gateway's topics: mosquitto acknowledges each denied
    /// publish as if delivered, so nothing can keep those messages; the gateway notices that its own message never
    /// comes back and says so on its health topic (which the ACL lets through): its status (`denied_suspected`), or
    /// any other family it publishes, here Home Assistant's discovery (`denied_suspected_families`). With everything
    /// allowed, it says nothing.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct StatusEchoEndToEndTests {
        enum Denied: String, CaseIterable, Sendable { case nothing, status, discovery }

        @Test(arguments: Denied.allCases)
        func underMQTT311AGatewayWhoseFamilyIsDeniedSaysSoInItsHealth(denied: Denied) async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("echo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let prefix = "echo\(UInt32.random(in: 0...UInt32.max))"
            let discovery = "\(prefix)ha"
            // Anonymous clients (the gateway and the observer) read everything; the gateway may write its health
            // and, unless denied, its status and its discovery documents.
            let allowed = ["health", "adapter", "adapters/#", "config/#", "beacons/#", "regions/#", "peripherals/#"]
            let acl =
                "topic read #\n" + allowed.map { "topic write \(prefix)/gw-echo/\($0)\n" }.joined()
                + (denied == .status ? "" : "topic write \(prefix)/gw-echo/status\n")
                + (denied == .discovery ? "" : "topic write \(discovery)/#\n")
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
            c.homeAssistant.enabled = true
            c.homeAssistant.discoveryPrefix = discovery
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            source.lock.withLock { source.runtime = runtime }
            let task = Task { try await runtime.run() }
            defer { task.cancel() }

            func published() -> [[String: Any]] {
                observer.states("\(prefix)/gw-echo/health").compactMap { $0["publish"] as? [String: Any] }
            }
            func suspected() -> [Bool] { published().compactMap { $0["denied_suspected"] as? Bool } }
            func families() -> [[String]] { published().compactMap { $0["denied_suspected_families"] as? [String] } }
            // The wait after the CONNACK is 10 s; health every second.
            let limit = GatewayRuntime.statusEchoWait + .seconds(15)
            switch denied {
            case .status:
                try await EndToEndSuites.waitFor("denied_suspected", limit: limit) { suspected().last == true }
                #expect(suspected().first == false, "nothing is suspected before the wait is over")
            case .discovery:
                try await EndToEndSuites.waitFor("the discovery family suspected", limit: limit) {
                    families().last?.isEmpty == false
                }
                #expect(families().last == ["\(discovery)/device"])
                #expect(families().first == [], "nothing is suspected before the wait is over")
                #expect(suspected().allSatisfy { !$0 }, "the status comes back: \(suspected())")
            case .nothing:
                try await EndToEndSuites.waitFor("a health report after the wait", limit: limit) {
                    observer.states("\(prefix)/gw-echo/health").contains { ($0["uptime_s"] as? Double ?? 0) > 12 }
                }
                #expect(!suspected().isEmpty && suspected().allSatisfy { !$0 }, "\(suspected())")
                #expect(!families().isEmpty && families().allSatisfy(\.isEmpty), "\(families().last ?? [])")
            }
            task.cancel()
            _ = try? await task.value
        }
    }
}
