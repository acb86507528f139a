import BLEDomain
import BLEGateway
import BLEHCI
import BLEHost
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration

extension EndToEndSuites {
    /// Enrolment through our own host against the simulator's phone, whose Security Manager is written apart from
    /// the gateway's (its own AES, CMAC, f4–f6 and g2): the phone connects to the advertising gateway, pairs with LE
    /// Secure Connections, and hands over its IRK; then the phone walks, rotating its address, and the gateway
    /// follows it by identity. Both sides follow one `ScaledClock`; times are virtual seconds.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(3)), .serialized)
    struct EnrolmentEndToEndTests {
        /// Core v5.4, Vol 3, Part H, Appendix D.7's IRK, as the phone's.
        static let irk = "ec0234a357c8ad05341010a60a397d9b"
        static let identity = BDAddress("5C:F3:70:00:00:01")!

        static func scenario(pairing: String, rotate: Double = 3, pairsWhen: String = "connected") -> String {
            """
            name: enrol-phone
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-e, position: [0, 0, 2]}]
            phones:
              - {name: alice, local_name: "Alice's phone", address: "\(identity)", irk: \(irk), rotate_s: \(rotate),
                 pairing: \(pairing), pairs_when: \(pairsWhen), interval_ms: 100, waypoints: [[1, 0, 1], [6, 0, 1]], speed_mps: 0.5}
            """
        }

        static func simulator(
            pairing: String, pairsWhen: String = "connected", directory: URL, clock: ScaledClock
        ) throws -> Simulator {
            var options = SimulatorOptions(socketDirectory: directory.appendingPathComponent("sim-\(pairing)").path)
            options.duration = 600
            return try Simulator(
                scenario: try ScenarioLoader.parse(scenario(pairing: pairing, pairsWhen: pairsWhen)), options: options,
                clock: clock,
                pacing: .clock(batch: .milliseconds(20)))
        }

        /// Runs one enrolment against a running simulator; returns the outcome and the digits the gateway was asked
        /// to confirm.
        /// `typing`: what the phone's user types when the gateway displays a passkey (Passkey Entry).
        static func enrol(
            _ simulator: Simulator, clock: ScaledClock, typing: @escaping @Sendable (UInt32) -> UInt32 = { $0 }
        ) async throws -> (Result<SMPPairingResponder.PeerIdentity, Enrolment.Failed>, [UInt32]) {
            let transport = try await connectWhenListening(simulator.socketPath(for: "gw-e"), clock: clock)
            defer { transport.close() }
            var o = Enrolment.Options()
            o.name = "BLEGateway test"
            o.timeout = .seconds(30)
            let shown = Locked<[UInt32]>([])
            let enrolment = Enrolment(options: o, clock: clock, logger: Logger(label: "test.enrol"))
            do {
                let identity = try await enrolment.run(
                    transport: transport,
                    confirm: { d in
                        shown.withLock { $0.append(d) }
                        return true
                    },
                    progress: { p in
                        if case .passkey(let passkey) = p {
                            shown.withLock { $0.append(passkey) }
                            simulator.nodes[0].typePasskey(typing(passkey))
                        }
                    })
                return (.success(identity), shown.withLock { $0 })
            } catch let e as Enrolment.Failed {
                return (.failure(e), shown.withLock { $0 })
            }
        }

        /// A gateway on the simulator's gw-e, scanning passively, publishing to the fixture's broker; `configure`
        /// adds what the test is about.
        static func runGateway(
            _ f: EndToEndSuites.Fixture, on simulator: Simulator, clock: ScaledClock,
            _ configure: (inout GatewayConfiguration) -> Void
        ) throws -> Task<Void, any Error> {
            var c = f.configuration()
            c.remoteConfig.enabled = false
            c.scan.active = false
            let socket = simulator.socketPath(for: "gw-e")
            c.adapter.device = "unix:\(socket)"
            configure(&c)
            let scan = c.scan
            let runtime = try GatewayRuntime(
                configuration: c,
                makeSource: { role in
                    HCISightingSource(
                        spec: .unix(path: socket), mode: .exclusive, scan: scan, clock: clock,
                        logger: Logger(label: "test"), role: role)
                },
                clock: clock, clockSynchronized: { true })
            return Task { try await runtime.run() }
        }

        /// The simulator's socket exists once `run()` has started listening.
        static func connectWhenListening(_ path: String, clock: some BLEClock) async throws -> any HCITransport {
            try await EndToEndSuites.waitFor("the simulator's socket") { FileManager.default.fileExists(atPath: path) }
            return try openTransport(.unix(path: path), clock: clock)
        }

        /// An iPhone starts no pairing of its own: the gateway asks with a Security Request as the link opens (and its
        /// database refuses the phone's read until the link is encrypted), and the iPhone pairs.
        @Test func anIPhoneThatPairsOnlyWhenAskedIsAskedAndEnrols() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let clock = ScaledClock(factor: 2)
            let simulator = try Self.simulator(
                pairing: "secure_connections", pairsWhen: "asked", directory: f.directory, clock: clock)
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            let (outcome, _) = try await Self.enrol(simulator, clock: clock)
            let identity = try outcome.get()
            #expect(HexDigits.string(identity.irk) == Self.irk)
            let phone = try #require(simulator.nodes[0].pairings.last)
            #expect(phone.outcome == .paired)
            #expect(phone.askedBy == .securityRequest, "asked by the gateway, not by pairing of its own accord")
        }

        @Test func aPhonePairsOnceItsIdentityIsKeptAndItIsFollowedThroughFiveAddressRotations() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let clock = ScaledClock(factor: 2)
            let simulator = try Self.simulator(pairing: "secure_connections", directory: f.directory, clock: clock)
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            let (outcome, shown) = try await Self.enrol(simulator, clock: clock)
            let identity = try outcome.get()
            #expect(HexDigits.string(identity.irk) == Self.irk)
            #expect(identity.address == Self.identity && identity.addressType == .public)
            // Numeric Comparison: the six digits the gateway asked about are the ones the phone showed.
            let phone = try #require(simulator.nodes[0].pairings.last)
            #expect(phone.outcome == .paired)
            #expect(
                shown.count == 1 && shown.first == phone.digits,
                "gateway \(shown), phone \(String(describing: phone.digits))")
            // The link was ended by the gateway and advertising stopped.
            try await EndToEndSuites.waitFor("the link ended") { simulator.nodes[0].links.isEmpty }

            // Kept mode 0600; the same phone enrolled again replaces its entry.
            let file = f.directory.appendingPathComponent("identities.yaml").path
            let entry = IdentityKeyFile.Entry(name: "alice-phone", irk: identity.irk, address: identity.address)
            #expect(try IdentityKeyFile.enrol(entry, at: file) == .added)
            var st = stat()
            #expect(stat(file, &st) == 0 && st.st_mode & 0o777 == 0o600)
            var renamed = entry
            renamed.name = "alice"
            #expect(try IdentityKeyFile.enrol(renamed, at: file) == .updated(previousName: "alice-phone"))
            #expect(try IdentityKeyFile.entries(file) == [renamed])
            let keys = try IdentityKeyFile.load(file)
            #expect(keys.map(\.identity) == [Self.identity])

            // Tracking: a gateway with the enrolled key ranges the phone under its identity only, across rotations.
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/beacons/+")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))
            let gateway = try Self.runGateway(f, on: simulator, clock: clock) { $0.identityKeys = keys }
            defer { gateway.cancel() }
            let identityTopic = "\(f.prefix)/\(f.gateway)/beacons/mac-\(Self.identity.topicComponent)"
            try await EndToEndSuites.waitFor("the identity ranged", limit: .seconds(30)) {
                !observer.states(identityTopic).isEmpty
            }
            let start = clock.now().seconds
            let spec = try #require(simulator.scenario.emitters.first?.phone)
            // Six periods from here: at least five changes of address while the gateway ranges.
            while clock.now().seconds < start + 6 * spec.rotation { try await Task.sleep(for: .milliseconds(50)) }
            let end = clock.now().seconds
            let addresses = Set(
                (spec.epoch(at: start)...spec.epoch(at: end)).map {
                    spec.address(epoch: $0, identity: Self.identity)
                })
            #expect(addresses.count >= 6, "the phone took \(addresses.count) addresses")
            let topics = Set(observer.lock.withLock { observer.messages.map(\.topic) })
            #expect(topics == [identityTopic], "every sighting is the identity's: \(topics.sorted())")
            let origin = clock.unixTime() - clock.now().seconds
            let late = observer.states(identityTopic).compactMap { $0["ts"] as? Double }.filter { $0 - origin > start }
            #expect(late.count >= 5, "ranged through the rotations: \(late.count) updates after \(start) s")
        }

        /// Enrolment through the broker, on a gateway that is running: `…/enrol` starts it beside the scanning, the
        /// six digits come on `…/enrol/state` and the operator's `confirm` answers them; a cancelled enrolment ends its
        /// link and its advertising; commands it cannot take are refused with the reason while the enrolment goes on.
        /// Then the same runtime, never restarted, follows the phone by its identity alone.
        @Test func aRunningGatewayEnrolsThroughTheBrokerAndFollowsThePhoneWithoutARestart() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer { f.broker.terminate() }
            let clock = ScaledClock(factor: 2)
            let simulator = try Self.simulator(pairing: "secure_connections", directory: f.directory, clock: clock)
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            let socket = simulator.socketPath(for: "gw-e")
            try await EndToEndSuites.waitFor("the simulator's socket") {
                FileManager.default.fileExists(atPath: socket)
            }
            let file = f.directory.appendingPathComponent("identities.yaml").path
            let base = "\(f.prefix)/\(f.gateway)"
            let observer = try Observer(port: f.broker.port, filter: "\(base)/#")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))
            let gateway = try Self.runGateway(f, on: simulator, clock: clock) { $0.identityKeysFile = file }
            defer { gateway.cancel() }
            // Scanning: the phone's own rotating addresses are ranged, each as a device of its own.
            try await EndToEndSuites.waitFor("the phone ranged by its private address", limit: .seconds(30)) {
                observer.lock.withLock { observer.messages.contains { $0.topic.hasPrefix("\(base)/beacons/") } }
            }
            let commands = "\(base)/enrol"
            func steps(_ id: String) -> [[String: Any]] {
                observer.states("\(commands)/state").filter { $0["id"] as? String == id }
            }
            func send(_ json: String) async throws { try await observer.publish(commands, Array(json.utf8)) }

            // A command with a key it does not know: refused, with the reason.
            try await send(#"{"id": "typo", "nmae": "alice"}"#)
            try await EndToEndSuites.waitFor("the refusal") { !steps("typo").isEmpty }
            #expect(steps("typo").first?["state"] as? String == "refused")
            #expect((steps("typo").first?["error"] as? String)?.contains("nmae") == true)

            // The first enrolment is cancelled while the digits wait for the operator.
            try await send(#"{"id": "e1", "name": "alice", "advertise": "BLEGateway test", "timeout_s": 60}"#)
            try await EndToEndSuites.waitFor("the first digits", limit: .seconds(30)) {
                steps("e1").contains { $0["state"] as? String == "compare" }
            }
            #expect(steps("e1").map { $0["state"] as? String } == ["advertising", "connected", "compare"])
            #expect(steps("e1").last?["awaiting_confirm"] as? Bool == true)
            try await send(#"{"id": "e1", "cancel": true}"#)
            try await EndToEndSuites.waitFor("the cancellation") { steps("e1").count == 4 }
            #expect(
                steps("e1").last?["state"] as? String == "failed"
                    && steps("e1").last?["error"] as? String == "cancelled")
            try await EndToEndSuites.waitFor("the link ended") { simulator.nodes[0].links.isEmpty }
            #expect(!simulator.nodes[0].advertising.enabled)
            #expect(!FileManager.default.fileExists(atPath: file), "nothing kept from a cancelled enrolment")

            // The second is confirmed; a start while it runs and an answer for another id are refused.
            try await send(#"{"id": "e2", "name": "alice", "advertise": "BLEGateway test", "timeout_s": 60}"#)
            try await EndToEndSuites.waitFor("the second digits", limit: .seconds(30)) {
                steps("e2").contains { $0["state"] as? String == "compare" }
            }
            try await send(#"{"id": "e3", "name": "bob"}"#)
            try await send(#"{"id": "e1", "confirm": true}"#)
            try await EndToEndSuites.waitFor("two refusals") { steps("e3").count == 1 && steps("e1").count == 5 }
            #expect((steps("e3").first?["error"] as? String)?.contains("already running (id \"e2\")") == true)
            #expect(steps("e1").last?["state"] as? String == "refused")
            let digits = steps("e2").last?["digits"] as? String
            try await send(#"{"id": "e2", "confirm": true}"#)
            try await EndToEndSuites.waitFor("enrolled", limit: .seconds(30)) {
                steps("e2").contains { ["enrolled", "failed"].contains($0["state"] as? String) }
            }
            let outcome = try #require(steps("e2").last)
            #expect(outcome["state"] as? String == "enrolled", "\(outcome)")
            #expect(
                outcome["identity"] as? String == Self.identity.description && outcome["change"] as? String == "added")
            let phone = try #require(simulator.nodes[0].pairings.last)
            #expect(phone.outcome == .paired)
            #expect(digits == phone.digits.map { String(format: "%06u", $0) }, "the digits shown are the phone's")
            #expect(try IdentityKeyFile.entries(file).map(\.name) == ["alice"])
            var st = stat()
            #expect(stat(file, &st) == 0 && st.st_mode & 0o777 == 0o600)
            #expect(
                !observer.lock.withLock { observer.messages.contains { "\($0.json)".lowercased().contains(Self.irk) } },
                "the IRK is never published")

            // Followed by its identity from now on, through rotations, by the gateway that never restarted.
            let identityTopic = "\(base)/beacons/mac-\(Self.identity.topicComponent)"
            try await EndToEndSuites.waitFor("the identity ranged", limit: .seconds(30)) {
                !observer.states(identityTopic).isEmpty
            }
            let mark = observer.lock.withLock { observer.messages.count }
            let spec = try #require(simulator.scenario.emitters.first?.phone)
            let start = clock.now().seconds
            while clock.now().seconds < start + 3 * spec.rotation { try await Task.sleep(for: .milliseconds(50)) }
            let (before, later) = observer.lock.withLock {
                (observer.messages[..<mark].map(\.topic), observer.messages[mark...].map(\.topic))
            }
            let beacons = later.filter { $0.hasPrefix("\(base)/beacons/") }
            #expect(beacons.filter { $0 == identityTopic }.count >= 3)
            // The phone took new addresses meanwhile, and none became a device of its own; a private address's track
            // from before the enrolment only winds down, ending with proximity unknown.
            #expect(Set(beacons).isSubset(of: Set(before)), "new devices: \(Set(beacons).subtracting(before))")
            for stale in Set(beacons).subtracting([identityTopic]) {
                try await EndToEndSuites.waitFor("\(stale) winds down", limit: .seconds(30)) {
                    observer.states(stale).last?["proximity"] as? String == "unknown"
                }
            }
            // Every step matches its schema (schema/v1/enrol-state.json); the commands are the operator's.
            let published = observer.lock.withLock { observer.messages.filter { $0.topic == "\(commands)/state" } }
            let problems = try SchemaValidation.problems(published, prefix: f.prefix, directory: f.directory)
            #expect(problems == nil, "schema validation: \(problems ?? "")")
        }

        /// A device that can only type: the gateway displays a passkey, the user types it, twenty rounds commit to its
        /// bits; typed wrong, the gateway finds the first bit that differs (Confirm Value Failed, 0x04).
        @Test(arguments: [false, true])
        func aKeyboardOnlyDevicePairsWithThePasskeyTheGatewayDisplays(typedWrong: Bool) async throws {
            signal(SIGPIPE, SIG_IGN)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("enrol-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let clock = ScaledClock(factor: 2)
            let simulator = try Self.simulator(pairing: "keyboard_only", directory: dir, clock: clock)
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            // A mistake in the highest bit: the last round is the one that fails.
            let (outcome, shown) = try await Self.enrol(simulator, clock: clock) { typedWrong ? $0 ^ 0x8_0000 : $0 }
            let phone = try #require(simulator.nodes[0].pairings.last)
            #expect(shown.count == 1 && shown.first.map { $0 < 1_000_000 } == true)
            if typedWrong {
                guard case .failure(let failed) = outcome else {
                    Issue.record("a wrong passkey enrolled")
                    return
                }
                #expect(failed.reason == .pairing(.refused(.confirmValueFailed)))
                #expect(phone.outcome == .failed(reason: 0x04, byPhone: false))
            } else {
                let identity = try outcome.get()
                #expect(HexDigits.string(identity.irk) == Self.irk && identity.address == Self.identity)
                #expect(phone.outcome == .paired && phone.digits == shown.first)
            }
        }

        @Test(arguments: [
            // Legacy pairing is refused with Authentication Requirements (0x03), by the gateway.
            (
                "legacy_only", Enrolment.Failed.Reason.pairing(.refused(.authenticationRequirements)),
                SimPhonePairing.Outcome.failed(reason: 0x03, byPhone: false)
            ),
            // The phone's user taps Cancel at the six digits: Numeric Comparison Failed (0x0C), from the phone.
            (
                "declines", .pairing(.peerFailed(.numericComparisonFailed)),
                .failed(reason: 0x0C, byPhone: true)
            ),
            // Pairs and encrypts, but keeps its identity to itself: nothing to enrol.
            ("withholds_identity", .pairing(.noIdentity), .paired),
        ])
        func aPairingThatCannotEnrolEndsWithItsReasonAndKeepsNothing(
            pairing: String, reason: Enrolment.Failed.Reason, phoneOutcome: SimPhonePairing.Outcome
        ) async throws {
            signal(SIGPIPE, SIG_IGN)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("enrol-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let clock = ScaledClock(factor: 2)
            let simulator = try Self.simulator(pairing: pairing, directory: dir, clock: clock)
            let sim = Task { try await simulator.run() }
            defer { sim.cancel() }
            let (outcome, _) = try await Self.enrol(simulator, clock: clock)
            guard case .failure(let failed) = outcome else {
                Issue.record("\(pairing): enrolled \(outcome)")
                return
            }
            #expect(failed.reason == reason)
            #expect(simulator.nodes[0].pairings.last?.outcome == phoneOutcome)
            try await EndToEndSuites.waitFor("the link ended") { simulator.nodes[0].links.isEmpty }
        }
    }
}
