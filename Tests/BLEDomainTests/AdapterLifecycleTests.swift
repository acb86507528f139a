import BLEDomain
import BLEHCI
import Testing

/// Drives the pure lifecycle in virtual time. A `world` answers the machine's `open` and `run` actions with the
/// events a real adapter would produce; `advance` delivers `timePassed` at every deadline the machine asks for.
struct LifecycleHarness {
    typealias L = AdapterLifecycle
    var machine: L
    var now: Duration = .zero
    var actions: [(Duration, L.Action)] = []
    var wake: Duration?
    /// How the simulated adapter answers an action (nil: no answer yet).
    var world: (L.Action) -> [L.Event] = { _ in [] }

    init(_ configure: (inout L.Configuration) -> Void = { _ in }) {
        var c = L.Configuration()
        configure(&c)
        machine = L(configuration: c)
    }

    @discardableResult
    mutating func send(_ event: L.Event) -> [L.Action] {
        var produced: [L.Action] = []
        var queue = [event]
        var guardCount = 0
        while !queue.isEmpty {
            guardCount += 1
            precondition(guardCount < 1000, "the machine and the world answer each other forever")
            let out = machine.handle(queue.removeFirst(), now: now)
            produced += out
            for a in out {
                actions.append((now, a))
                if case .wait(let t) = a { wake = t }
                queue += world(a)
            }
            if !out.contains(where: { if case .wait = $0 { true } else { false } }) { wake = nil }
        }
        return produced
    }

    /// Moves time to `t`, waking the machine at each deadline on the way.
    mutating func advance(to t: Duration) {
        while let w = wake, w <= t {
            #expect(w > now || actions.isEmpty, "a wait must be in the future: \(w) at \(now)")
            now = max(now, w)
            wake = nil
            send(.timePassed)
        }
        now = t
    }

    mutating func advance(by d: Duration) { advance(to: now + d) }

    /// Shared mode's lifecycle: the adapter is the kernel's, so no rfkill unblock and no USB reset.
    static func shared() -> LifecycleHarness {
        LifecycleHarness {
            $0.allowRfkillUnblock = false
            $0.allowUSBReset = false
        }
    }

    var published: [(L.Status, String?)] {
        actions.compactMap { if case .publish(let s, let r) = $0.1 { (s, r) } else { nil } }
    }

    var steps: [L.Step] { actions.compactMap { if case .run(let s, _, _) = $0.1 { s } else { nil } } }
    var opens: Int { actions.filter { if case .open = $0.1 { true } else { false } }.count }
}

/// A healthy adapter: every open and every step brings scanning back.
func healthy(_ a: AdapterLifecycle.Action) -> [AdapterLifecycle.Event] {
    switch a {
    case .open: [.transportOpened, .bringUpSucceeded, .scanEnabled]
    case .run(let s, _, _) where s == .powerCycle: [.transportOpened, .bringUpSucceeded, .scanEnabled]
    case .run(let s, _, _) where s == .resetController: [.bringUpSucceeded, .scanEnabled]
    case .run: [.scanEnabled]
    default: []
    }
}

@Suite struct AdapterLifecycleTests {
    @Test func startOpensTheAdapterAndPublishesPoweredOnOnceScanning() {
        var h = LifecycleHarness()
        h.world = healthy
        let out = h.send(.start)
        #expect(out.contains(.open))
        #expect(h.machine.status == .poweredOn)
        #expect(h.published.map(\.0) == [.poweredOn])
    }

    @Test func silenceAfterReportsFlowedClimbsFromReenableScanAndCountsTheRecovery() {
        var h = LifecycleHarness { $0.silenceTimeout = .seconds(60) }
        h.world = healthy
        h.send(.start)
        h.advance(to: .seconds(5))
        h.send(.reportReceived)
        h.advance(to: .seconds(64))
        #expect(h.steps.isEmpty)
        h.advance(to: .seconds(65))
        #expect(h.steps == [.reenableScan])
        #expect(h.published.contains { $0.0 == .resetting && $0.1?.contains("reenable_scan") == true })
        #expect(h.machine.statistics.recoveries[.reenableScan] == 1)
        #expect(h.machine.statistics.silences == 1)
        #expect(h.machine.status == .poweredOn)
    }

    @Test func noSilenceWatchdogBeforeAnyReportFlowed() {
        var h = LifecycleHarness { $0.silenceTimeout = .seconds(10) }
        h.world = healthy
        h.send(.start)
        h.advance(to: .seconds(3600))
        #expect(h.steps.isEmpty)
        #expect(h.machine.statistics.climbs == 0)
    }

    @Test func scanningHandedToTheOtherAdapterIsNoSilenceUntilReportsFlowAgain() {
        var h = LifecycleHarness { $0.silenceTimeout = .seconds(10) }
        h.world = healthy
        h.send(.start)
        h.send(.reportReceived)
        h.advance(to: .seconds(5))
        h.send(.scanDutyChanged)  // the other adapter scans now
        h.advance(to: .seconds(600))
        #expect(h.steps.isEmpty)
        // Scanning here again, reports flow, then stop: the watchdog counts from then.
        h.send(.scanDutyChanged)
        h.send(.reportReceived)
        h.advance(to: .seconds(609))
        #expect(h.steps.isEmpty)
        h.advance(to: .seconds(611))
        #expect(h.steps == [.reenableScan])
    }

    @Test func silenceThatPersistsIsRecheckedAtAGrowingBoundNotEveryTimeout() {
        var h = LifecycleHarness { $0.silenceTimeout = .seconds(10) }
        h.world = healthy
        h.send(.start)
        h.send(.reportReceived)
        h.advance(to: .seconds(3600))
        // 10 s, then 20, 40, 80 and 80 s from then on: about 45 climbs in an hour, not 360.
        #expect(h.steps.count < 60)
        #expect(h.steps.count > 10)
    }

    @Test func hardwareErrorResetsTheControllerAtOnce() {
        var h = LifecycleHarness()
        h.world = healthy
        h.send(.start)
        h.advance(to: .seconds(100))
        let out = h.send(.hardwareError(code: 0x42))
        #expect(out.contains(.run(.resetController, attempt: 1, of: 2)))
        #expect(
            out.contains(
                .publish(
                    .resetting,
                    reason: "recovery step reset_controller (attempt 1 of 2): Hardware Error event (code 0x42)")))
        #expect(out.contains(.recovered(by: .resetController, after: .zero)))
        #expect(h.machine.status == .poweredOn)
    }

    @Test func aStuckControllerIsResetWithinThreeSecondsOfTheFirstUnansweredCommand() {
        // HCIController reports an unanswered command after its timeout, checked every quarter of it.
        let c = HCIController.Configuration()
        let reportedWithin = c.commandTimeout + c.commandTimeout / 4
        #expect(reportedWithin <= .seconds(3))
        var h = LifecycleHarness()
        h.world = healthy
        h.send(.start)
        h.advance(by: reportedWithin)
        let out = h.send(.commandTimedOut(reason: "LE Set Scan Enable got no answer within 2 s"))
        #expect(out.first { if case .run = $0 { true } else { false } } == .run(.resetController, attempt: 1, of: 2))
    }

    @Test func aFailingResetRetriesWithBackoffThenPowerCyclesThenPublishesAClearState() {
        var h = LifecycleHarness()
        h.world = { a in
            switch a {
            case .open: healthy(a)
            case .run(let s, _, _) where s == .resetController:
                [.bringUpFailed(reason: "HCI status 0x03 Hardware Failure", leUnsupported: false)]
            case .run(let s, _, _) where s == .powerCycle: [.transportFailed(.other, reason: "EIO")]
            default: []
            }
        }
        h.send(.start)
        h.send(.hardwareError(code: 1))
        #expect(h.steps == [.resetController])
        h.advance(by: .milliseconds(999))
        #expect(h.steps == [.resetController])
        h.advance(by: .milliseconds(1))
        // Second reset after 1 s; it fails, so a power cycle at once; it fails twice (1 s apart); then the end.
        h.advance(by: .seconds(1))
        #expect(h.steps == [.resetController, .resetController, .powerCycle, .powerCycle])
        #expect(h.machine.status == .poweredOff)
        #expect(h.published.last?.1?.contains("recovery failed") == true)
        #expect(h.machine.statistics.exhausted == 1)
        // rfkill and USB reset are skipped: not blocked, and not permitted by default.
        #expect(!h.steps.contains(.rfkillUnblock) && !h.steps.contains(.usbReset))
    }

    @Test func anAdapterThatAnswersEveryCommandWithAnErrorIsRetriedBoundedlyForAnHour() {
        var h = LifecycleHarness()
        h.world = { a in
            switch a {
            case .open:
                [
                    .transportOpened,
                    .bringUpFailed(
                        reason: "HCI status 0x0C Command Disallowed",
                        leUnsupported: false),
                ]
            case .run(let s, _, _) where s == .powerCycle:
                [.transportOpened, .bringUpFailed(reason: "HCI status 0x0C Command Disallowed", leUnsupported: false)]
            case .run(let s, _, _): [.stepFailed(s, reason: "HCI status 0x0C Command Disallowed")]
            default: []
            }
        }
        h.send(.start)
        h.advance(to: .seconds(3600))
        // One climb (4 attempts) then one open every 30 s: bounded, never a busy loop.
        #expect(h.opens + h.steps.count < 3600 / 30 * 2 + 10)
        #expect(h.machine.status == .poweredOff)
        #expect(h.published.last?.1?.contains("Command Disallowed") == true)
        let waits = h.actions.compactMap { e -> Bool? in if case .wait(let t) = e.1 { t > e.0 } else { nil } }
        #expect(waits.allSatisfy { $0 })
    }

    @Test func leUnsupportedIsPublishedAndRetriedSlowly() {
        var h = LifecycleHarness()
        h.world = { a in
            if case .open = a { return [.transportOpened, .bringUpFailed(reason: "no LE", leUnsupported: true)] }
            return []
        }
        h.send(.start)
        #expect(h.machine.status == .unsupported)
        h.advance(to: .seconds(600))
        #expect(h.steps.isEmpty)
        #expect(h.opens == 21)  // at 0, then every 30 s
        #expect(h.published.count == 1)
    }

    @Test func missingCapabilityIsUnauthorizedAndRetriedAtTheMaximumBackoff() {
        var h = LifecycleHarness()
        h.world = { a in a == .open ? [.transportFailed(.permissionDenied, reason: "needs CAP_NET_RAW")] : [] }
        h.send(.start)
        #expect(h.machine.status == .unauthorized)
        h.advance(to: .seconds(59))
        #expect(h.opens == 2)
    }

    @Test func anAbsentAdaptersPublishedNextTryFollowsTheBackoffAndThenStaysStill() {
        var h = LifecycleHarness { $0.maxBackoff = .seconds(30) }
        h.world = { a in a == .open ? [.transportFailed(.absent, reason: "no Bluetooth adapter hci0")] : [] }
        h.send(.start)
        h.advance(to: .seconds(600))
        let reasons = h.published.filter { $0.0 == .absent }.compactMap(\.1)
        // 1, 2, 4, 8, 16, then 30 s for good: each delay published once, never a stale one.
        #expect(
            reasons.map { $0.components(separatedBy: "next try in ").last ?? "" }
                == ["1 s", "2 s", "4 s", "8 s", "16 s", "30 s"])
        #expect(h.opens > 20, "retried all along")
    }

    @Test func unplugPowerCyclesThenWaitsForTheAdapterAndScansAsSoonAsItReturns() {
        var present = true
        var h = LifecycleHarness()
        h.send(.start)
        h.send(.transportOpened)
        h.send(.bringUpSucceeded)
        h.send(.scanEnabled)
        present = false
        h.world = { a in
            switch a {
            case .run(.powerCycle, _, _), .open:
                present ? healthy(a) : [.transportFailed(.absent, reason: "no Bluetooth adapter hci0")]
            default: []
            }
        }
        h.advance(to: .seconds(10))
        h.send(.transportEnded(reason: "end of input"))
        #expect(h.steps == [.powerCycle])
        #expect(h.machine.status == .absent)
        h.advance(to: .seconds(200))
        let opensWhileAbsent = h.opens
        #expect(opensWhileAbsent < 12)  // backoff 1, 2, 4 … 30 s
        present = true
        let out = h.send(.adapterAdded)
        #expect(out.contains(.open))  // at once, not at the next backoff deadline
        #expect(h.machine.status == .poweredOn)
        #expect(h.machine.statistics.recoveries[.awaitAdapter] == 1)
        #expect(h.machine.statistics.lastTimeToRecover == .seconds(190))
    }

    /// Shared mode: bluetoothd (or `btmgmt power off`) powers the adapter off. Nothing to recover: no step, no
    /// `resetting`, just `poweredOff`; powered on again, it is opened at once, not at the slow retry.
    @Test func anAdapterPoweredOffByItsOwnerIsPoweredOffWithoutAClimbAndOpenedAsSoonAsItIsBack() {
        var h = LifecycleHarness.shared()
        h.world = healthy
        h.send(.start)
        h.advance(to: .seconds(10))
        h.world = { a in a == .open ? [.adapterPoweredOff(reason: "hci0 is powered off")] : [] }
        h.send(.adapterPoweredOff(reason: "hci0 was powered off"))
        #expect(h.machine.status == .poweredOff)
        #expect(h.published.map(\.0) == [.poweredOn, .poweredOff])
        #expect(h.published.last?.1?.hasPrefix("hci0 was powered off; next try in 30 s") == true)
        h.advance(to: .seconds(100))
        #expect(h.steps.isEmpty)
        #expect(h.machine.statistics.climbs == 0)
        #expect(!h.published.contains { $0.0 == .resetting })
        #expect(h.opens <= 4)  // the slow retry (30 s): the index events say when it is back
        h.world = healthy
        let out = h.send(.adapterAdded)
        #expect(out.contains(.open))
        #expect(h.machine.status == .poweredOn)
    }

    /// An adapter pulled out: rfkill's switch goes with it (removed), and the kernel's index events may still say it
    /// went down after that. It stays absent (the VM saw absent → poweredOff → absent for one removal).
    @Test func anAdapterRemovedAndThenSaidToBeDownStaysAbsent() {
        var h = LifecycleHarness.shared()
        h.world = healthy
        h.send(.start)
        h.world = { _ in [] }
        h.send(.adapterRemoved)
        h.send(.adapterPoweredOff(reason: "hci0 was powered off"))
        #expect(h.machine.status == .absent)
        #expect(h.published.map(\.0) == [.poweredOn, .absent])
        h.world = healthy
        #expect(h.send(.adapterAdded).contains(.open))
        #expect(h.machine.status == .poweredOn)
    }

    /// rfkill blocks the radio under a shared scan: the kernel powers the adapter off and rfkill reports the block,
    /// in either order; the state ends `blocked`, never unblocked by the gateway.
    @Test func aSharedAdapterPoweredOffByAnRfkillBlockIsBlockedWhicheverNewsComesFirst() {
        for blockFirst in [true, false] {
            var h = LifecycleHarness.shared()
            h.world = healthy
            h.send(.start)
            h.world = { a in a == .open ? [.adapterPoweredOff(reason: "hci0 is powered off")] : [] }
            if blockFirst { h.send(.rfkillChanged(soft: true, hard: false)) }
            h.send(.adapterPoweredOff(reason: "hci0 was powered off"))
            if !blockFirst { h.send(.rfkillChanged(soft: true, hard: false)) }
            h.advance(to: .seconds(120))
            #expect(h.machine.status == .blocked)
            #expect(!h.steps.contains(.rfkillUnblock))
        }
    }

    @Test func repeatedFaultsClimbAtMostOncePerBackoffPeriodAndEscalate() {
        var h = LifecycleHarness()
        h.world = healthy
        h.send(.start)
        var climbStarts: [Duration] = []
        for _ in 0..<40 {
            let before = h.steps.count
            h.send(.hardwareError(code: 7))
            for _ in 0..<400 where h.steps.count == before { h.advance(by: .milliseconds(100)) }
            #expect(h.steps.count == before + 1)
            climbStarts.append(h.now)
        }
        let gaps = zip(climbStarts.dropFirst(), climbStarts).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= .seconds(1) - .milliseconds(100) })
        #expect(gaps.suffix(10).allSatisfy { $0 >= .seconds(30) - .milliseconds(100) })
        // The second fault before the adapter was stable starts above the step that cured the first.
        #expect(Array(h.steps.prefix(2)) == [.resetController, .powerCycle])
    }

    @Test func aStableAdapterStartsOverAtTheCheapestStepWithoutDelay() {
        var h = LifecycleHarness()
        h.world = healthy
        h.send(.start)
        h.send(.hardwareError(code: 1))
        h.advance(by: .seconds(61))
        let out = h.send(.hardwareError(code: 1))
        #expect(out.contains(.run(.resetController, attempt: 1, of: 2)))
    }

    @Test func rfkillBlockWithoutPolicyWaitsAndRescansAtOnceWhenUnblocked() {
        var h = LifecycleHarness()
        h.world = healthy
        h.send(.start)
        h.send(.rfkillChanged(soft: true, hard: false))
        #expect(h.machine.status == .blocked)
        #expect(h.published.last?.1?.contains("policy does not allow") == true)
        h.world = { a in a == .open ? [.transportFailed(.blocked, reason: "rfkill")] : [] }
        h.advance(to: .seconds(300))
        #expect(!h.steps.contains(.rfkillUnblock))
        h.world = healthy
        let out = h.send(.rfkillChanged(soft: false, hard: false))
        #expect(out.contains(.open))
        #expect(h.machine.status == .poweredOn)
    }

    @Test func anRfkillThatNeverUnblocksIsTriedBoundedlyThenPublishedBlocked() {
        var h = LifecycleHarness { $0.allowRfkillUnblock = true }
        h.world = healthy
        h.send(.start)
        // The unblock write "works" but rfkill never reports the radio unblocked; opens keep failing.
        h.world = { a in a == .open ? [.transportFailed(.blocked, reason: "rfkill blocks hci0")] : [] }
        h.send(.rfkillChanged(soft: true, hard: false))
        #expect(h.steps == [.rfkillUnblock])
        h.advance(to: .seconds(3600))
        #expect(h.steps.filter { $0 == .rfkillUnblock }.count <= 2)
        #expect(h.machine.status == .blocked)
        #expect(h.opens < 3600 / 30 + 5)
    }

    @Test func aSoftBlockThatRfkillReportsAgainIsStillUnblockedOnlyOnce() {
        var h = LifecycleHarness { $0.allowRfkillUnblock = true }
        h.world = healthy
        h.send(.start)
        h.world = { a in a == .open ? [.transportFailed(.blocked, reason: "rfkill blocks hci0")] : [] }
        h.send(.rfkillChanged(soft: true, hard: false))
        // Whoever blocked the radio means it: rfkill reports the same soft block again and again (as it does on
        // every write to the device), and the gateway must not read each report as a new block to clear.
        for minute in 1...60 {
            h.advance(to: .seconds(60 * minute))
            h.send(.rfkillChanged(soft: true, hard: false))
        }
        #expect(h.steps.filter { $0 == .rfkillUnblock }.count <= 2, "one unblock step (its two attempts) per block")
        #expect(h.machine.status == .blocked)
        // A new block after the radio was free is a new block: tried again.
        h.world = healthy
        h.send(.rfkillChanged(soft: false, hard: false))
        #expect(h.machine.status == .poweredOn)
        let before = h.steps.filter { $0 == .rfkillUnblock }.count
        h.send(.rfkillChanged(soft: true, hard: false))
        #expect(h.steps.filter { $0 == .rfkillUnblock }.count == before + 1)
    }

    @Test func aHardBlockIsNeverUnblocked() {
        var h = LifecycleHarness { $0.allowRfkillUnblock = true }
        h.world = healthy
        h.send(.start)
        h.send(.rfkillChanged(soft: false, hard: true))
        #expect(h.steps.isEmpty)
        #expect(h.published.last?.1?.contains("hard block") == true)
    }

    @Test func usbResetRunsOnlyWhenPermitted() {
        var h = LifecycleHarness { $0.allowUSBReset = true }
        h.world = { a in
            switch a {
            case .open: healthy(a)
            case .run(let s, _, _) where s == .usbReset: [.transportOpened, .bringUpSucceeded, .scanEnabled]
            case .run(let s, _, _): [.stepFailed(s, reason: "no answer")]
            default: []
            }
        }
        h.send(.start)
        h.send(.hardwareError(code: 2))
        h.advance(by: .seconds(10))
        #expect(h.steps.last == .usbReset)
        #expect(h.machine.statistics.recoveries[.usbReset] == 1)
    }

    @Test func anOperationWithoutOutcomeIsBounded() {
        var h = LifecycleHarness { $0.operationTimeout = .seconds(20) }
        h.send(.start)  // the world never answers the open
        h.advance(to: .seconds(3600))
        #expect(h.opens + h.steps.count < 3600 / 20 + 5)
        #expect(h.machine.status == .poweredOff)
    }
}
