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
    @Suite(.enabled(if: Mosquitto.isAvailable, "needs /usr/sbin/mosquitto (make test installs it)"),
           .timeLimit(.minutes(3)), .serialized)
    struct EnrolmentEndToEndTests {
        /// Core v5.4, Vol 3, Part H, Appendix D.7's IRK, as the phone's.
        static let irk = "ec0234a357c8ad05341010a60a397d9b"
        static let identity = BDAddress("5C:F3:70:00:00:01")!

        static func scenario(pairing: String, rotate: Double = 3) -> String {
            """
            name: enrol-phone
            radio: {loss_probability: 0, shadowing_sigma_db: 1}
            gateways: [{id: gw-e, position: [0, 0, 2]}]
            phones:
              - {name: alice, local_name: "Alice's phone", address: "\(identity)", irk: \(irk), rotate_s: \(rotate),
                 pairing: \(pairing), interval_ms: 100, waypoints: [[1, 0, 1], [6, 0, 1]], speed_mps: 0.5}
            """
        }

        static func simulator(pairing: String, directory: URL, clock: ScaledClock) throws -> Simulator {
            var options = SimulatorOptions(socketDirectory: directory.appendingPathComponent("sim-\(pairing)").path)
            options.duration = 600
            return try Simulator(
                scenario: try ScenarioLoader.parse(scenario(pairing: pairing)), options: options, clock: clock,
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
                    transport: transport, confirm: { d in shown.withLock { $0.append(d) }; return true },
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

        /// The simulator's socket exists once `run()` has started listening.
        static func connectWhenListening(_ path: String, clock: some BLEClock) async throws -> any HCITransport {
            try await EndToEndSuites.waitFor("the simulator's socket") { FileManager.default.fileExists(atPath: path) }
            return try openTransport(.unix(path: path), clock: clock)
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
            #expect(shown.count == 1 && shown.first == phone.digits, "gateway \(shown), phone \(String(describing: phone.digits))")
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
            var c = f.configuration()
            c.remoteConfig.enabled = false
            c.identityKeys = keys
            c.scan.active = false
            let socket = simulator.socketPath(for: "gw-e")
            c.adapter.device = "unix:\(socket)"
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/beacons/+")
            defer { observer.stop() }
            try await observer.publish("\(f.prefix)/probe", Array("{}".utf8))
            let runtime = try GatewayRuntime(
                configuration: c,
                makeSource: { role in
                    HCISightingSource(spec: .unix(path: socket), mode: .exclusive, scan: c.scan, clock: clock,
                                      logger: Logger(label: "test"), role: role)
                },
                clock: clock, clockSynchronized: { true })
            let gateway = Task { try await runtime.run() }
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
            let addresses = Set((spec.epoch(at: start)...spec.epoch(at: end)).map {
                spec.address(epoch: $0, identity: Self.identity)
            })
            #expect(addresses.count >= 6, "the phone took \(addresses.count) addresses")
            let topics = Set(observer.lock.withLock { observer.messages.map(\.topic) })
            #expect(topics == [identityTopic], "every sighting is the identity's: \(topics.sorted())")
            let origin = clock.unixTime() - clock.now().seconds
            let late = observer.states(identityTopic).compactMap { $0["ts"] as? Double }.filter { $0 - origin > start }
            #expect(late.count >= 5, "ranged through the rotations: \(late.count) updates after \(start) s")
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
            ("legacy_only", Enrolment.Failed.Reason.pairing(.refused(.authenticationRequirements)),
             SimPhonePairing.Outcome.failed(reason: 0x03, byPhone: false)),
            // The phone's user taps Cancel at the six digits: Numeric Comparison Failed (0x0C), from the phone.
            ("declines", .pairing(.peerFailed(.numericComparisonFailed)),
             .failed(reason: 0x0C, byPhone: true)),
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
