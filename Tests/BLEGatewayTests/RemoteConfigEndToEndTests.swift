import BLEDomain
import BLEHCI
import BLEPublishing
import BLETestSupport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// Remote configuration against a real mosquitto, with the gateway running in this process over a scripted source.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct RemoteConfigEndToEndTests {
        @Test func aRetainedConfigPresentAtConnectIsInForceBeforeTheFirstScan() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/#")
            defer { observer.stop() }
            try await observer.publish(
                f.fleetTopic, Array(#"{"version": 3, "publishing": {"ranging_interval_s": 0.3}}"#.utf8))
            try await observer.publish(f.configTopic, Array(#"{"version": 9, "scan": {"filters": ["name:A"]}}"#.utf8))

            let (runtime, source, task) = try f.start(f.configuration())
            try await EndToEndSuites.waitFor("first scan") {
                source.lock.withLock { source.configurationAtStart != nil }
            }
            let atStart = try #require(source.lock.withLock { source.configurationAtStart })
            #expect(atStart.scan.filters == ["name:A"])
            #expect(atStart.publishing.rangingIntervalSeconds == 0.3)

            try await EndToEndSuites.waitFor("both layers reported") {
                observer.states(f.stateTopic).contains { ($0["in_force"] as? [String: Any])?.count == 2 }
            }
            // The last report names the configuration in force (under load the two layers' reports may still be
            // arriving when both are first seen together).
            try await EndToEndSuites.waitFor("the reported hash is the effective one") {
                observer.states(f.stateTopic).last?["hash"] as? String == runtime.effectiveConfiguration.effectiveHash
            }
            let last = try #require(observer.states(f.stateTopic).last)
            #expect(last["status"] as? String == "applied")
            // Only beacon A passes the remote filter.
            try await EndToEndSuites.waitFor("beacons") { !observer.beacons(after: 0).isEmpty }
            #expect(observer.beacons(after: 0).allSatisfy { ($0["id"] as? String)?.contains("c0ffee00") ?? true })
            task.cancel()
            _ = try? await task.value
        }

        @Test func withNoRetainedDocumentTheReturnedSyncEndsTheStartWaitNotItsDeadline() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()
            // Far past the wait below: only the nonce coming back can let the first scan happen in time.
            c.remoteConfig.startupWaitSeconds = 60
            await observer.client.subscribed("\(f.prefix)/\(f.gateway)/#")
            let (_, source, task) = try f.start(c)
            try await EndToEndSuites.waitFor("first scan", limit: .seconds(20)) {
                source.lock.withLock { source.configurationAtStart != nil }
            }
            func syncs() -> [[String: Any]] {
                observer.lock.withLock {
                    observer.messages.filter { $0.topic == "\(f.prefix)/\(f.gateway)/config/sync" }.map(\.json)
                }
            }
            // The observer hears it beside the gateway, not necessarily before the gateway went on.
            try await EndToEndSuites.waitFor("the sync seen by the observer") { !syncs().isEmpty }
            // Sent once: it came back on the first connection.
            try await EndToEndSuites.waitFor("a reading after it") { !observer.beacons(after: 0).isEmpty }
            #expect(syncs().count == 1)
            #expect(syncs().first?["nonce"] is String)
            task.cancel()
            _ = try? await task.value
        }

        @Test func aBrokerWhoseACLRefusesTheSyncStillStartsAtTheDeadline() async throws {
            // Everything this test's gateway and observer use, but not config/sync.
            let f = try Fixture(acl: { p in
                ["\(p)/fleet/config", "\(p)/gw-rc/+", "\(p)/gw-rc/config/state", "\(p)/gw-rc/beacons/#"]
                    .map { "topic readwrite \($0)\n" }.joined()
            })
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            try await observer.publish(f.configTopic, Array(#"{"version": 4, "scan": {"filters": ["name:A"]}}"#.utf8))
            var c = f.configuration()
            c.remoteConfig.startupWaitSeconds = 1.5
            let (runtime, source, task) = try f.start(c)
            try await EndToEndSuites.waitFor("first scan") {
                source.lock.withLock { source.configurationAtStart != nil }
            }
            // The barrier never came back (the broker refused the nonce), so what ended the wait was the deadline.
            #expect(
                runtime.state.withLock { $0.retainedSync } != .returned,
                "the sync came back through a broker whose ACL refuses it")
            try await EndToEndSuites.waitFor("the retained document applied") {
                observer.states(f.stateTopic).contains { $0["version"] as? Int == 4 }
            }
            task.cancel()
            _ = try? await task.value
        }

        @Test func aChangeMidRunAppliesAndNoReadingIsLostAcrossIt() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            let (runtime, _, run) = try f.startStoppable(f.configuration())
            try await EndToEndSuites.waitFor("readings flowing") { observer.beacons(after: 0).count >= 4 }

            let sent = ContinuousClock.now
            try await observer.publish(
                f.configTopic,
                Array(
                    """
                    {"version": 2, "publishing": {"ranging_interval_s": 0.5}, "scan": {"filters": ["name:B"]},
                     "log": {"level": "warning"}}
                    """.utf8))
            try await EndToEndSuites.waitFor("applied") {
                observer.states(f.stateTopic).contains { $0["version"] as? Int == 2 }
            }
            let latency = ContinuousClock.now - sent
            let state = try #require(observer.states(f.stateTopic).last { $0["version"] as? Int == 2 })
            #expect(state["status"] as? String == "applied")
            #expect(runtime.effectiveConfiguration.publishing.rangingIntervalSeconds == 0.5)
            let appliedSeq = try #require(state["seq"] as? Int)
            try await EndToEndSuites.waitFor("new-interval readings") {
                observer.beacons(after: appliedSeq).contains { $0["interval_s"] as? Double == 0.5 }
            }
            // Ranging reports every tracked beacon each interval; a beacon the new filter keeps out is still tracked
            // for a while but no longer heard (samples 0). The first flush after the change still holds A's sightings
            // from before it; in every later one only B (address …c0ffee01) is heard.
            func flushes() -> [Double: [String]] {
                Dictionary(
                    grouping: observer.beacons(after: appliedSeq).filter { $0["interval_s"] as? Double == 0.5 },
                    by: { $0["ts"] as? Double ?? 0 }
                )
                .mapValues { $0.filter { ($0["samples"] as? Int ?? 0) > 0 }.compactMap { $0["id"] as? String } }
            }
            try await EndToEndSuites.waitFor("three flushes") { flushes().count >= 3 }
            let later = flushes().sorted { $0.key < $1.key }.dropFirst()
            #expect(!later.isEmpty && later.allSatisfy { $0.value == ["mac-0000c0ffee01"] }, "\(later)")
            await run.stop()
            try await EndToEndSuites.waitFor("the gateway's shutdown status") { observer.sawShutdown }
            #expect(EndToEndSuites.gaps(observer.seqs) == [])
            print("remote config change → config/state applied seen by a subscriber after \(latency)")
        }

        @Test func malformedDocumentsAreEachRejectedOnConfigStateWhileTheGatewayKeepsRunning() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            let (runtime, _, run) = try f.startStoppable(f.configuration())
            try await EndToEndSuites.waitFor("first state") { !observer.states(f.stateTopic).isEmpty }
            try await observer.publish(f.configTopic, Array(#"{"version": 1, "log": {"level": "debug"}}"#.utf8))
            try await EndToEndSuites.waitFor("good applied") {
                observer.states(f.stateTopic).contains { $0["version"] as? Int == 1 }
            }
            let good = runtime.effectiveConfiguration

            for (name, payload, path, reason) in RemoteConfigDocumentTests.malformed where !payload.isEmpty {
                let before = observer.states(f.stateTopic).count
                try await observer.publish(f.configTopic, payload)
                try await EndToEndSuites.waitFor(name) { observer.states(f.stateTopic).count > before }
                let s = try #require(observer.states(f.stateTopic).last)
                #expect(s["status"] as? String == "rejected", "\(name)")
                let errors = s["errors"] as? [[String: Any]] ?? []
                #expect(
                    errors.contains {
                        $0["path"] as? String == path && ($0["reason"] as? String)?.contains(reason) == true
                    },
                    "\(name): \(errors)")
                #expect(s["hash"] as? String == good.effectiveHash, "\(name)")
            }
            #expect(runtime.effectiveConfiguration == good)
            // Every verdict matches schema/v1/config-state.json.
            let verdicts = observer.states(f.stateTopic)
            let problems = try SchemaValidation.problems(
                verdicts.map { (topic: f.stateTopic, json: $0) },
                prefix: f.prefix, directory: f.directory, name: "states.jsonl")
            #expect(problems == nil, "schema validation: \(problems ?? "")")
            #expect(verdicts.count >= RemoteConfigDocumentTests.malformed.count)
            let lastSeq = observer.seqs.max() ?? 0
            try await EndToEndSuites.waitFor("still publishing") { !observer.beacons(after: lastSeq).isEmpty }
            await run.stop()
            try await EndToEndSuites.waitFor("the gateway's shutdown status") { observer.sawShutdown }
            #expect(EndToEndSuites.gaps(observer.seqs) == [])
        }

        @Test func theStoredConfigComesBackWithoutABrokerAndAnEmptyRetainedDocumentFallsBackToTheFile() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()
            c.remoteConfig.startupWaitSeconds = 0.5
            do {
                let (_, _, task) = try f.start(c)
                try await observer.publish(
                    f.configTopic, Array(#"{"version": 5, "scan": {"filters": ["name:B"]}}"#.utf8))
                try await EndToEndSuites.waitFor("applied") {
                    observer.states(f.stateTopic).contains { $0["version"] as? Int == 5 }
                }
                task.cancel()
                _ = try? await task.value
            }
            // No broker: the stored layer is in force at the first scan.
            var offline = c
            offline.mqtt.broker = "mqtt://127.0.0.1:\(try Loopback.freePort())"
            do {
                let (_, source, task) = try f.start(offline)
                try await EndToEndSuites.waitFor("first scan") {
                    source.lock.withLock { source.configurationAtStart != nil }
                }
                #expect(source.lock.withLock { source.configurationAtStart?.scan.filters } == ["name:B"])
                task.cancel()
                _ = try? await task.value
            }
            // A poison retained document (10,000 nested lists) does not stop a start: refused, the stored layer stays.
            try await observer.publish(
                f.configTopic,
                Array(
                    (String(repeating: "[", count: 10_000)
                        + String(repeating: "]", count: 10_000)).utf8))
            for _ in 0..<2 {
                let before = observer.states(f.stateTopic).count
                let (runtime, source, task) = try f.start(c)
                try await EndToEndSuites.waitFor("poison refused") {
                    observer.states(f.stateTopic).dropFirst(before).contains { $0["status"] as? String == "rejected" }
                }
                try await EndToEndSuites.waitFor("first scan") {
                    source.lock.withLock { source.configurationAtStart != nil }
                }
                #expect(source.lock.withLock { source.configurationAtStart?.scan.filters } == ["name:B"])
                #expect(runtime.effectiveConfiguration.scan.filters == ["name:B"])
                task.cancel()
                _ = try? await task.value
            }
            // The operator deletes the retained document: back to the local file.
            try await observer.publish(f.configTopic, [])
            do {
                let (runtime, source, task) = try f.start(c)
                try await EndToEndSuites.waitFor("first scan") {
                    source.lock.withLock { source.configurationAtStart != nil }
                }
                #expect(source.lock.withLock { source.configurationAtStart?.scan.filters } == [])
                #expect(runtime.effectiveConfiguration == c)
                task.cancel()
                _ = try? await task.value
            }
        }

        @Test func withAPublicKeyOnlySignedDocumentsApplyAndAnOlderVersionIsRefused() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            let (privateKey, publicKey) = ConfigSigning.generateKeyPair()
            let keyFile = f.directory.appendingPathComponent("ops.pub")
            try publicKey.write(to: keyFile, atomically: true, encoding: .utf8)
            var c = f.configuration()
            c.remoteConfig.publicKeyFile = keyFile.path
            let (runtime, _, task) = try f.start(c)
            try await EndToEndSuites.waitFor("first state") { !observer.states(f.stateTopic).isEmpty }

            func push(_ text: String, signed: Bool) async throws -> [String: Any] {
                let before = observer.states(f.stateTopic).count
                let doc = Array(text.utf8)
                let payload =
                    signed
                    ? try ConfigSigning.sign(doc, privateKey: privateKey, for: .gateway(f.gateway)) : doc
                try await observer.publish(f.configTopic, payload)
                try await EndToEndSuites.waitFor("verdict") { observer.states(f.stateTopic).count > before }
                return try #require(observer.states(f.stateTopic).last)
            }
            let unsigned = try await push(#"{"version": 1, "log": {"level": "debug"}}"#, signed: false)
            #expect(unsigned["status"] as? String == "rejected")
            let v5 = try await push(#"{"version": 5, "log": {"level": "debug"}}"#, signed: true)
            #expect(v5["status"] as? String == "applied")
            let v4 = try await push(#"{"version": 4, "log": {"level": "error"}}"#, signed: true)
            #expect(v4["status"] as? String == "rejected")
            #expect((v4["errors"] as? [[String: Any]])?.first?["path"] as? String == "$.version")
            #expect(runtime.effectiveConfiguration.log.level == "debug")
            // Anyone with publish access can clear the retained topic: that is refused, not a deletion.
            let before = observer.states(f.stateTopic).count
            try await observer.publish(f.configTopic, [])
            try await EndToEndSuites.waitFor("verdict on the empty message") {
                observer.states(f.stateTopic).count > before
            }
            let cleared = try #require(observer.states(f.stateTopic).last)
            #expect(cleared["status"] as? String == "rejected")
            #expect(cleared["signed_only"] as? Bool == true)
            #expect(((cleared["floors"] as? [String: Any])?["gateway"] as? [String: Any])?["version"] as? Int == 5)
            #expect(runtime.effectiveConfiguration.log.level == "debug")
            task.cancel()
            _ = try? await task.value
        }
    }
}
