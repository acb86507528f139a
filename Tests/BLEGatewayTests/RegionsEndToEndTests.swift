import BLEDomain
import BLEHCI
import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// Regions through the whole gateway, against a real mosquitto: the runtime in this process over a scripted source,
    /// the retained region topic read back by a subscriber. Real time with a 1 s exit timeout; waits have wide guards.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct RegionsEndToEndTests {
        /// One iBeacon (UUID E2C56DB5-…, major 1, minor 7) and one device behind a resolvable private address
        /// (70:81:94:0D:FB:AA: prand 708194, hash 0dfbaa under the IRK of Core v5.4 Vol 3 Part H Appendix D.7), each
        /// heard every 20 ms while `emitting`; `cycleAdapter` makes the adapter report poweredOff then poweredOn once.
        final class Source: SightingSource, @unchecked Sendable {
            let lock = NSLock()
            var emitting = false
            var cycleAdapter = false
            var counters: SightingSourceCounters { SightingSourceCounters() }
            static let advertisement: [UInt8] = [
                0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15,
                0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2,
                0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
                0x00, 0x01, 0x00, 0x07, 0xC5,
            ]

            func run(
                adapter: @escaping @Sendable (AdapterReport) -> Void,
                sighting: @escaping @Sendable (Sighting) -> Void
            ) async throws {
                adapter(AdapterReport(state: .poweredOn, device: "test", mode: .exclusive))
                while !Task.isCancelled {
                    let (emit, cycle) = lock.withLock { () -> (Bool, Bool) in
                        defer { cycleAdapter = false }
                        return (emitting, cycleAdapter)
                    }
                    if cycle {
                        adapter(AdapterReport(state: .poweredOff, device: "test", mode: .exclusive, reason: "drill"))
                        adapter(AdapterReport(state: .poweredOn, device: "test", mode: .exclusive))
                    }
                    if emit {
                        sighting(
                            Sighting(
                                address: BDAddress(rawValue: 0xC0FF_EE00_0001), addressType: .random, rssi: -60,
                                txPower: nil, timestamp: 0, isConnectable: false, isScanResponse: false,
                                advertisement: Advertisement(decoding: Self.advertisement[...])))
                        let flags: [UInt8] = [0x02, 0x01, 0x06]
                        sighting(
                            Sighting(
                                address: BDAddress(rawValue: 0x7081_940D_FBAA), addressType: .random, rssi: -60,
                                txPower: nil, timestamp: 0, isConnectable: true, isScanResponse: false,
                                advertisement: Advertisement(decoding: flags[...])))
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                throw CancellationError()
            }
        }

        @Test func aBeaconEntersThenExitsAfterTheTimeoutAndARecoveryIsNoFalseExit() async throws {
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let topic = "\(f.prefix)/\(f.gateway)/regions/lobby"
            let badgeTopic = "\(f.prefix)/\(f.gateway)/regions/badge"
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/regions/+")
            defer { observer.stop() }
            var c = f.configuration()
            c.remoteConfig.enabled = false
            var reader = YAMLConfigurationReader()
            let file = try reader.read(
                """
                regions:
                  - id: lobby
                    uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0
                    major: 1
                    exit_timeout_s: 1
                  - {id: badge, address: "C0:00:00:00:00:07", exit_timeout_s: 1}
                identity_keys:
                  - {name: badge, irk: ec0234a357c8ad05341010a60a397d9b, address: "C0:00:00:00:00:07"}
                """)
            c.regions = file.regions
            c.identityKeys = file.identityKeys
            // The observer's subscription is in place before the gateway's first (unknown) state.
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))
            let source = Source()
            let runtime = try GatewayRuntime(configuration: c, source: source, clockSynchronized: { true })
            let task = Task { try await runtime.run() }

            func events(_ topic: String = topic) -> [String] {
                var seen: Set<Int> = []
                return observer.states(topic).compactMap { j -> String? in
                    guard let seq = j["seq"] as? Int, seen.insert(seq).inserted else { return nil }
                    return "\(j["state"] as? String ?? "?")/\(j["event"] as? String ?? "?")"
                }
            }
            func waitFor(_ last: String) async throws {
                try await EndToEndSuites.waitFor(last) { events().last == last }
            }

            // Starts unknown; nothing heard for the timeout: outside (a first determination, not an exit).
            try await waitFor("outside/determined")
            source.lock.withLock { source.emitting = true }
            try await waitFor("inside/enter")
            // An adapter recovery while the beacon stays: unknown, then inside again, with no exit and no enter.
            source.lock.withLock { source.cycleAdapter = true }
            try await waitFor("inside/determined")
            source.lock.withLock { source.emitting = false }
            try await waitFor("outside/exit")
            let expected = [
                "unknown/determined", "outside/determined", "inside/enter", "unknown/determined",
                "inside/determined", "outside/exit",
            ]
            #expect(events() == expected)
            // The device is heard only at its private address: the region on its identity address follows it because
            // the address resolves.
            try await EndToEndSuites.waitFor("badge exit") { events(badgeTopic).last == "outside/exit" }
            #expect(events(badgeTopic) == expected)
            let enter = try #require(observer.states(topic).first { $0["event"] as? String == "enter" })
            #expect(enter["region"] as? String == "lobby")
            #expect((enter["beacons"] as? [String])?.first?.hasPrefix("ibeacon-") == true, "\(enter)")

            // Retained: a newcomer learns the last state at once.
            let late = try Observer(port: f.broker.port, filter: topic)
            defer { late.stop() }
            try await EndToEndSuites.waitFor("retained") { !late.states(topic).isEmpty }
            #expect(late.states(topic).first?["state"] as? String == "outside")

            task.cancel()
            _ = try? await task.value

            // What was published matches schema/v1/region.json (and the envelope).
            let published =
                observer.states(topic).map { (topic: topic, json: $0) }
                + observer.states(badgeTopic).map { (topic: badgeTopic, json: $0) }
            let problems = try SchemaValidation.problems(
                published, prefix: f.prefix, directory: f.directory,
                name: "regions.jsonl")
            #expect(problems == nil, "schema validation: \(problems ?? "")")
        }
    }
}
