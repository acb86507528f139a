import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// An operator's ACL mistake, fixed with a reload, seen from the outside: under MQTT 5 the broker refuses the
    /// gateway's beacon readings (0x87 Not authorized) while it still takes its status; the status says so
    /// (`publish_refused`), and once the ACL allows them every refused reading arrives and the status says it is over.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct PublishRefusalEndToEndTests {
        @Test func theStatusSaysWhileTheBrokerRefusesAndEveryRefusedReadingArrivesAfterTheReload() async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let prefix = "refused\(UInt32.random(in: 0...UInt32.max))"
            let acl = dir.appendingPathComponent("acl")
            // Anonymous clients read everything and write everything but beacon readings.
            try "topic read #\ntopic write \(prefix)/gw-r/status\ntopic write \(prefix)/gw-r/health\n"
                .appending("topic write \(prefix)/gw-r/adapter\ntopic write \(prefix)/gw-r/config/state\n")
                .write(to: acl, atomically: true, encoding: .utf8)
            let broker = try Mosquitto(directory: dir, configuration: ["acl_file \(acl.path)"])
            try broker.start()
            defer { broker.terminate(limit: .seconds(5)) }
            let port = broker.port

            let observer = try Observer(port: port, filter: "\(prefix)/gw-r/#")
            defer { observer.stop() }
            var c = GatewayConfiguration()
            c.gateway.id = "gw-r"
            c.mqtt.broker = "mqtt://127.0.0.1:\(port)"
            c.mqtt.prefix = prefix
            c.spool.path = dir.appendingPathComponent("spool.sqlite").path
            c.publishing.rangingIntervalSeconds = 0.2
            c.remoteConfig.enabled = false
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            source.lock.withLock { source.runtime = runtime }
            let task = Task { try await runtime.run() }
            defer { task.cancel() }

            let statusTopic = "\(prefix)/gw-r/status"
            func refused() -> [String: Any]? {
                observer.states(statusTopic).last?["publish_refused"] as? [String: Any]
            }
            do {
                try await EndToEndSuites.waitFor("the status says publishes are refused", limit: .seconds(20)) {
                    refused() != nil
                }
            } catch {
                Issue.record("no status with publish_refused; statuses seen: \(observer.states(statusTopic))")
                throw error
            }
            #expect(refused()?["reason_code"] as? Int == 0x87)
            #expect(refused()?["reason"] as? String == "Not authorized")
            #expect(observer.beacons(after: 0).isEmpty)

            // The operator fixes the ACL and reloads.
            try "topic readwrite #\n".write(to: acl, atomically: true, encoding: .utf8)
            broker.reload()
            do {
                try await EndToEndSuites.waitFor("beacons", limit: .seconds(90)) {
                    observer.beacons(after: 0).count >= 20
                }
            } catch {
                let log = (try? String(contentsOf: dir.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? ""
                let seen = "seqs seen: \(observer.seqs.suffix(20)); statuses: \(observer.states(statusTopic).suffix(3))"
                Issue.record("no beacons after the reload; \(seen); broker log: \(String(log.suffix(3000)))")
                throw error
            }
            try await EndToEndSuites.waitFor("a status without the refusal", limit: .seconds(90)) {
                observer.states(statusTopic).last.map {
                    $0["publish_refused"] == nil && $0["state"] as? String == "online"
                }
                    ?? false
            }
            // One episode from the first refusal to the reload: the status and health the broker took in between did
            // not end it (an ACL refuses by topic), so it neither flapped nor let its backoff reset.
            let episodes = Set(
                observer.states(statusTopic).compactMap {
                    ($0["publish_refused"] as? [String: Any])?["since"] as? Double
                })
            #expect(episodes.count == 1, "\(observer.states(statusTopic))")
            task.cancel()
            _ = try? await task.value
            // Nothing the broker refused is missing (QoS 1 may repeat; it must not skip).
            #expect(EndToEndSuites.gaps(observer.seqs) == [])
        }

        /// A new user's broker, with an ACL that does not yet let the gateway write Home Assistant's discovery: the
        /// broker refuses every document (0x87), and the gateway once stalled behind the first one, publishing no
        /// health and no reading at all. Now the documents wait (counted on the health topic as refused) while the
        /// beacons and the health reports flow, and no family of the spool is held back.
        @Test func aDeniedDiscoveryDocumentWaitsAloneAndTheHealthSaysSo() async throws {
            // Everything under the gateway's prefix may be written; Home Assistant's discovery prefix may not.
            let f = try Fixture(acl: { "topic read #\ntopic readwrite \($0)/#\n" })
            defer { f.broker.terminate(limit: .seconds(5)) }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()
            c.publishing.healthIntervalSeconds = 1
            c.remoteConfig.enabled = false
            c.homeAssistant.enabled = true
            let (runtime, _, task) = try f.start(c)
            defer { task.cancel() }

            let health = "\(f.prefix)/\(f.gateway)/health"
            func refusedDocuments() -> Int? {
                (observer.states(health).last?["homeassistant"] as? [String: Any])?["refused_documents"] as? Int
            }
            do {
                try await EndToEndSuites.waitFor("a health report counting the refused documents", limit: .seconds(30))
                {
                    (refusedDocuments() ?? 0) > 0 && observer.beacons(after: 0).count >= 20
                }
            } catch {
                Issue.record(
                    "health: \(observer.states(health).suffix(2)); beacons: \(observer.beacons(after: 0).count)")
                throw error
            }
            #expect(runtime.publisher.statistics.refusedFamilies == [], "nothing of the spool is held back")
            #expect(runtime.publisher.statistics.rejected == 0)
            task.cancel()
            _ = try? await task.value
            #expect(EndToEndSuites.gaps(observer.seqs) == [], "the refused documents took no seq")
        }

        /// The raw advertisement stream's token bucket holds back what exceeds `raw_max_per_s`: every one held back is
        /// counted once and published on the health topic (it was dropped without a count).
        @Test func rawAdvertisementsOverTheRateAreCountedOnTheHealthTopic() async throws {
            let f = try Fixture()
            defer { f.broker.terminate(limit: .seconds(5)) }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()
            c.publishing.healthIntervalSeconds = 1
            c.publishing.rawAdvertisements = true
            c.publishing.rawMaxPerSecond = 1
            c.remoteConfig.enabled = false
            let (_, _, task) = try f.start(c)
            defer { task.cancel() }
            let health = "\(f.prefix)/\(f.gateway)/health"
            func scan() -> [String: Any]? { observer.states(health).last?["scan"] as? [String: Any] }
            try await EndToEndSuites.waitFor(
                "a health report counting rate-limited raw advertisements", limit: .seconds(20)
            ) {
                (scan()?["raw_rate_limited"] as? Int ?? 0) > 50
            }
            // The scripted source sends two sightings every 10 ms: far more held back than published.
            let raw = observer.lock.withLock { observer.messages.filter { $0.topic.contains("/raw/") }.count }
            #expect(raw < (scan()?["raw_rate_limited"] as? Int ?? 0), "\(raw) raw published")
            #expect((scan()?["reassembly"] as? [String: Int]) == ["evicted": 0, "expired": 0, "oversized": 0])
            #expect(scan()?["telemetry_discarded"] as? Int == 0)
            #expect((observer.states(health).last?["publish"] as? [String: Any])?["dropped_deliveries"] as? Int == 0)
        }
    }
}
