import BLEDomain
import BLEGateway
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Glibc
import Logging
import Testing

@testable import BLEConfiguration

extension EndToEndSuites {
    /// Adapters that open but cannot be used (issue #5, "bad input"), against the simulator's controller over its H4
    /// socket: one that answers every command with an error, one that does no LE, one that never answers. Each must
    /// end in a clear published state and a bounded retry — at most about one open per `maxBackoff` while the fault
    /// lasts, never a loop — and scan again once the fault is gone.
    ///
    /// Time is virtual and moved in lockstep with the process going idle (a `ManualClock`, `ProcessQuiescence`, as in
    /// `AdapterRecoveryTests`), so the counts below do not depend on how busy the machine is. The simulator's counters
    /// say what reached the controller: a host connection per transport open, every command it was sent.
    @Suite(.timeLimit(.minutes(5)))
    struct AdapterBadInputTests {
        /// Ten virtual minutes of fault; it ends off the whole and half seconds on which the gateway's timers fall.
        static let faultEnd = 600.3
        static let end = 650.0

        static func yaml(_ fault: String) -> String {
            """
            name: bad-adapter
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-a, position: [0, 0]}]
            beacons:
              - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1,
                 interval_ms: 1000, position: [2, 0]}
            faults:
              - \(fault)

            """
        }

        /// What one run saw: the published states and sightings, and the controller's counters each time they moved.
        struct Observation {
            var reports: [(t: Double, report: AdapterReport)] = []
            var sightings: [Double] = []
            var counters: [(t: Double, stats: GatewayStats)] = []
            var lifecycle: AdapterLifecycle.Statistics?
            var stalledAt: Double?

            /// When the gateway opened the transport (the simulator accepted a host), in virtual seconds.
            var opens: [Double] {
                var last = 0
                var out: [Double] = []
                for (t, s) in counters where s.connectionsAccepted > last {
                    out += Array(repeating: t, count: s.connectionsAccepted - last)
                    last = s.connectionsAccepted
                }
                return out
            }

            /// The controller's counters as they stood before `t` (the first sample is taken before the first open).
            func stats(before t: Double) -> GatewayStats? { counters.last { $0.t < t }?.stats }

            var states: String {
                reports.map { "\(String(format: "%.2f", $0.t)) \($0.report.state) \($0.report.reason ?? "")" }
                    .joined(separator: "\n")
            }
        }

        /// Every bring-up logs its failure: hundreds of lines that say nothing the assertions do not.
        static var quiet: Logger {
            var l = Logger(label: "test")
            l.logLevel = .critical
            return l
        }

        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var reports: [(t: Double, report: AdapterReport)] = []
            var sightings: [Double] = []
        }

        /// Runs a supervised `HCISightingSource` against the simulator with `fault` from virtual time 0 until `end`.
        static func run(_ fault: String, lifecycle: AdapterLifecycle.Configuration) async throws -> Observation {
            signal(SIGPIPE, SIG_IGN)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
                "bad-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: dir) }
            let clock = ManualClock()
            var options = SimulatorOptions(socketDirectory: dir.path)
            options.duration = end + 10
            let simulator = try Simulator(
                scenario: try ScenarioLoader.parse(yaml(fault)), options: options,
                clock: clock, pacing: .clock(batch: .zero))
            let sim = Task { try await simulator.run() }
            // The fault (at 0) is in force before the gateway's first open: the simulator applied it once it sleeps.
            var observation = Observation()
            guard
                await ProcessQuiescence.onOwnThread({
                    ProcessQuiescence.wait(atMost: 60, until: { clock.nextDeadline != nil })
                })
            else {
                sim.cancel()
                observation.stalledAt = 0
                return observation
            }
            let source = HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-a")), mode: .exclusive,
                scan: GatewayConfiguration.Scan(),
                clock: clock, logger: Self.quiet, lifecycle: lifecycle)
            let seen = Seen()
            let gateway = Task {
                try await source.run(
                    adapter: { r in seen.lock.withLock { seen.reports.append((clock.now().seconds, r)) } },
                    sighting: { _ in seen.lock.withLock { seen.sightings.append(clock.now().seconds) } })
            }
            let node = simulator.nodes[0]
            let driven = await ProcessQuiescence.onOwnThread {
                () -> (counters: [(t: Double, stats: GatewayStats)], stalledAt: Double?) in
                var counters: [(t: Double, stats: GatewayStats)] = []
                while clock.now().seconds < Self.end {
                    guard ProcessQuiescence.wait(atMost: 60, until: { true }) else {
                        return (counters, clock.now().seconds)
                    }
                    let s = node.stats
                    if s != counters.last?.stats { counters.append((clock.now().seconds, s)) }
                    let next = min(clock.nextDeadline ?? .seconds(Self.end), clock.now() + .milliseconds(500))
                    clock.advance(to: max(next, clock.now() + .milliseconds(1)))
                }
                return (counters, nil)
            }
            observation.lifecycle = source.lifecycleStatistics
            gateway.cancel()
            sim.cancel()
            let stopped = await AdapterRecoveryTests.ends(gateway, within: 30)
            #expect(stopped, "the gateway did not stop within 30 s of being cancelled")
            if stopped { _ = await sim.result }
            observation.counters = driven.counters
            observation.stalledAt = driven.stalledAt
            (observation.reports, observation.sightings) = seen.lock.withLock { (seen.reports, seen.sightings) }
            return observation
        }

        /// While the fault lasts, opens come at most about one per `maxBackoff` (after the climb's own, each
        /// `maxBackoff` or more after the previous), and they keep coming: the gateway never gives up on the adapter.
        static func expectBoundedOpens(
            _ o: Observation, climbOpens: Int, lifecycle: AdapterLifecycle.Configuration,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let period = lifecycle.maxBackoff.seconds
            let opens = o.opens.filter { $0 < faultEnd }
            let slots = Int(faultEnd / period)
            #expect(
                opens.count >= slots - 1 && opens.count <= climbOpens + slots + 1,
                "\(opens.count) opens in \(faultEnd) s: \(opens)\n\(o.states)", sourceLocation: sourceLocation)
            let periodic = opens.dropFirst(climbOpens)
            for (a, b) in zip(periodic, periodic.dropFirst()) {
                #expect(b - a >= period - 0.01, "opens at \(a) and \(b): \(opens)", sourceLocation: sourceLocation)
            }
        }

        /// Once the fault is over, the next periodic open finds a good controller: poweredOn within `maxBackoff` (and
        /// the bring-up's few seconds), and sightings after it.
        static func expectScansAgain(
            _ o: Observation, lifecycle: AdapterLifecycle.Configuration,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let by = faultEnd + lifecycle.maxBackoff.seconds + 5
            let on = o.reports.first { $0.t >= faultEnd && $0.report.state == .poweredOn }
            #expect(on != nil && on!.t <= by, "not poweredOn by \(by)\n\(o.states)", sourceLocation: sourceLocation)
            #expect(
                o.sightings.contains { $0 > (on?.t ?? .infinity) && $0 <= by + 5 }, "no sighting after poweredOn",
                sourceLocation: sourceLocation)
            #expect(o.reports.last?.report.state == .poweredOn, "\(o.states)", sourceLocation: sourceLocation)
            #expect(
                !o.sightings.contains { $0 < faultEnd }, "sightings while the adapter could not scan",
                sourceLocation: sourceLocation)
        }

        @Test func aControllerThatAnswersEveryCommandWithAnErrorIsPublishedPoweredOffAndRetriedOncePerMaxBackoff()
            async throws
        {
            let lifecycle = AdapterLifecycle.Configuration()
            let o = try await Self.run(
                "{at_s: 0, gateway: gw-a, type: command_errors, duration_s: \(Self.faultEnd)}",
                lifecycle: lifecycle)
            #expect(o.stalledAt == nil, "the process never went idle at \(o.stalledAt ?? 0) s\n\(o.states)")
            let during = o.reports.filter { $0.t < Self.faultEnd }
            let refused = "Reset (0x0C03) failed: HCI status 0x03 Hardware Failure"
            // One climb: Reset and bring-up twice, then a power cycle twice, each step published with the status.
            let steps = during.filter { $0.report.state == .resetting }
            let ladder = (lifecycle.attempts[.resetController] ?? 0) + (lifecycle.attempts[.powerCycle] ?? 0)
            #expect(steps.count == ladder, "\(o.states)")
            #expect(steps.allSatisfy { $0.report.reason?.contains(refused) == true }, "\(o.states)")
            #expect(o.lifecycle?.climbs == 1, "\(String(describing: o.lifecycle))")
            // Then a clear state for the rest of the fault, naming the status by number and name, published once.
            let waiting = during.filter { $0.report.state != .resetting }
            #expect(waiting.count == 1 && waiting.first?.report.state == .poweredOff, "\(o.states)")
            let reason = waiting.first?.report.reason ?? ""
            #expect(reason.contains("recovery failed (\(refused))") && reason.contains("next try in 30 s"), "\(reason)")
            #expect(during.last?.report.state == .poweredOff)
            // Bounded: the climb's own opens (the first and two power cycles), then one a `maxBackoff`.
            let climbOpens = 1 + (lifecycle.attempts[.powerCycle] ?? 0)
            Self.expectBoundedOpens(o, climbOpens: climbOpens, lifecycle: lifecycle)
            // Each bring-up stops at its first refused command (HCI Reset): no command is repeated in a loop.
            let atEnd = try #require(o.stats(before: Self.faultEnd))
            let bringUps = o.opens.filter { $0 < Self.faultEnd }.count + (lifecycle.attempts[.resetController] ?? 0)
            #expect(
                atEnd.commandsRefused == bringUps && atEnd.commands == bringUps,
                "\(atEnd.commands) commands, \(atEnd.commandsRefused) refused, \(bringUps) bring-ups")
            Self.expectScansAgain(o, lifecycle: lifecycle)
            #expect(o.lifecycle?.recoveries == [.awaitAdapter: 1], "\(String(describing: o.lifecycle))")
        }

        @Test func aBREDROnlyControllerIsPublishedUnsupportedNamingTheRefusedLECommandAndReopenedOncePerMaxBackoff()
            async throws
        {
            let lifecycle = AdapterLifecycle.Configuration()
            let o = try await Self.run(
                "{at_s: 0, gateway: gw-a, type: le_unsupported, duration_s: \(Self.faultEnd)}",
                lifecycle: lifecycle)
            #expect(o.stalledAt == nil, "the process never went idle at \(o.stalledAt ?? 0) s\n\(o.states)")
            let during = o.reports.filter { $0.t < Self.faultEnd }
            // No reset can give a controller LE: unsupported at once, no ladder, published once.
            #expect(during.count == 1 && during.first?.report.state == .unsupported, "\(o.states)")
            let reason = during.first?.report.reason ?? ""
            #expect(
                reason.contains("LE Read Local Supported Features (0x2003) failed: HCI status 0x01 Unknown HCI Command")
                    && reason.contains("LE is required") && reason.contains("next try in 30 s"), "\(reason)")
            #expect(
                o.lifecycle?.climbs == 0 && o.lifecycle?.attempts.isEmpty == true, "\(String(describing: o.lifecycle))")
            Self.expectBoundedOpens(o, climbOpens: 1, lifecycle: lifecycle)
            // Each bring-up stops at its first LE command, the only one refused: Reset, the version, the supported
            // commands and the LMP features are read, LE Read Local Supported Features is unknown.
            let atEnd = try #require(o.stats(before: Self.faultEnd))
            let opens = o.opens.filter { $0 < Self.faultEnd }.count
            #expect(
                atEnd.commandsRefused == opens && atEnd.commands == 5 * opens,
                "\(atEnd.commands) commands, \(atEnd.commandsRefused) refused, \(opens) opens")
            Self.expectScansAgain(o, lifecycle: lifecycle)
        }

        @Test func aControllerThatNeverAnswersIsPublishedPoweredOffAndReopenedOncePerMaxBackoff() async throws {
            let lifecycle = AdapterLifecycle.Configuration()
            // power_off with no duration: every command goes unanswered until the end of the run.
            let o = try await Self.run("{at_s: 0, gateway: gw-a, type: power_off}", lifecycle: lifecycle)
            #expect(o.stalledAt == nil, "the process never went idle at \(o.stalledAt ?? 0) s\n\(o.states)")
            let steps = o.reports.filter { $0.report.state == .resetting }
            let ladder = (lifecycle.attempts[.resetController] ?? 0) + (lifecycle.attempts[.powerCycle] ?? 0)
            #expect(steps.count == ladder, "\(o.states)")
            #expect(
                steps.allSatisfy { $0.report.reason?.contains("Reset (0x0C03) got no answer") == true }, "\(o.states)")
            let waiting = o.reports.filter { $0.report.state != .resetting }
            #expect(waiting.count == 1 && waiting.first?.report.state == .poweredOff, "\(o.states)")
            #expect(
                waiting.first?.report.reason?.contains("recovery failed (Reset (0x0C03) got no answer") == true,
                "\(o.states)")
            #expect(o.lifecycle?.climbs == 1, "\(String(describing: o.lifecycle))")
            Self.expectBoundedOpens(o, climbOpens: 1 + (lifecycle.attempts[.powerCycle] ?? 0), lifecycle: lifecycle)
            // One command per bring-up, Reset, dropped by the unpowered controller; none sent again before it times out.
            let atEnd = try #require(o.stats(before: Self.end))
            let bringUps = o.opens.count + (lifecycle.attempts[.resetController] ?? 0)
            #expect(
                atEnd.commandsWhilePoweredOff == bringUps && atEnd.commands == bringUps,
                "\(atEnd.commands) commands, \(bringUps) bring-ups")
            #expect(o.sightings.isEmpty)
        }
    }
}
