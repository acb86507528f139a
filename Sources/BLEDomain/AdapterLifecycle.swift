import BLEHCI
import BLETransport

/// The adapter's life, as a pure state machine: what happened to the adapter goes in (`Event`), what the caller
/// must do comes out (`Action`): publish a state, open the adapter, run one step of the recovery ladder, or call
/// back at a time. Time is injected (`now` on every event), so tests run the whole ladder in virtual time.
///
/// The recovery ladder, cheapest first (each step with a bounded number of attempts and a backoff between them):
/// re-enable scanning → HCI Reset and bring-up → power cycle (reopen the transport) → rfkill unblock (only when
/// rfkill blocks the radio and policy allows) → USB device reset (only when policy allows) → wait for the adapter
/// to return. A fault starts the climb at the first step that can cure it (a silent scan at re-enable, a Hardware
/// Error or an unanswered command at Reset, a lost transport at power cycle). At most one climb starts per climb
/// backoff period, and the period doubles while faults keep coming, so a flapping adapter cannot cause a storm.
public struct AdapterLifecycle: Sendable {
    // MARK: State

    enum Operation: Sendable, Equatable {
        case open
        case step(Step, attempt: Int)
    }

    enum Phase: Sendable, Equatable {
        /// Not started.
        case idle
        /// An operation is under way since the time given; its outcome comes as events.
        case busy(Operation, since: Duration)
        /// The operation runs at the deadline (or sooner: hotplug and rfkill events shortcut an open).
        case pending(Operation, at: Duration)
        /// Scanning since the time given.
        case scanning(since: Duration)
    }

    /// The silence watchdog's view of the scan. A scan that has never had a report is not judged (a gateway started
    /// in an empty room, or one whose other adapter scans, is quiet, not stalled); once reports came it is, from the
    /// last report or the last (re)enable, whichever is later.
    enum Silence: Sendable, Equatable {
        case unarmed
        /// `factor` multiplies the configured bound: it doubles after each silence climb that brought no report back,
        /// so an emptied room is not reset forever at the same pace, and falls back to 1 with the next report.
        case armed(lastReport: Duration?, factor: Int)
    }

    /// rfkill's view of this adapter's radio.
    enum Radio: Sendable, Equatable {
        case unblocked
        /// A soft block that software may clear; `unblockTried` once the gateway has tried (once per block: if the
        /// unblock does not stick, someone means it).
        case softBlocked(unblockTried: Bool)
        /// The switch: nothing software does can clear it, a soft block beside it included.
        case hardBlocked

        var isSoftBlocked: Bool {
            if case .softBlocked = self { return true }
            return false
        }

        /// The radio as rfkill now reports it; a soft block that goes on keeps what was tried on it.
        func changed(soft: Bool, hard: Bool) -> Radio {
            if hard { return .hardBlocked }
            guard soft else { return .unblocked }
            if case .softBlocked = self { return self }
            return .softBlocked(unblockTried: false)
        }
    }

    /// A climb in progress or just finished: where it started and when.
    struct Climb: Sendable, Equatable {
        var fault: String
        var startedAt: Duration
        var from: Step
    }

    public let configuration: Configuration
    public private(set) var statistics = Statistics()
    private(set) var phase: Phase = .idle
    /// The last published status, so the same state is not published twice.
    private(set) var published: Status?
    private var publishedReason: String?
    private var climb: Climb?
    private var lastClimbStart: Duration?
    private var climbBackoff: Duration = .zero
    /// The highest step that cured the last fault; the next fault before the adapter is stable starts above it.
    private var escalation: Step?
    private var silence = Silence.unarmed
    private var openBackoff: Duration = .zero
    private var radio = Radio.unblocked

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The last published status (nil before the first).
    public var status: Status? { published }
    /// When the machine next needs `timePassed` (nil: only an event can move it): what the service watchdog holds it
    /// to (a ladder whose deadlines pass with nothing done is wedged).
    public var deadline: Duration? { nextDeadline() }

    /// Whether the radio is blocked by rfkill, as last reported.
    public var isBlocked: Bool { radio != .unblocked }
}

// MARK: - Transitions

extension AdapterLifecycle {
    /// Feeds one event; returns what the caller must do, in order. The last action is a `wait` whenever the
    /// machine needs to be called back; a `wait` is always strictly in the future (never a busy loop).
    public mutating func handle(_ event: Event, now: Duration) -> [Action] {
        var out: [Action] = []
        switch event {
        case .start:
            beginOpen(now: now, &out)
        case .transportOpened, .bringUpSucceeded:
            break  // progress within an operation; only scanEnabled ends it
        case .scanEnabled:
            scanEnabled(now: now, &out)
        case .reportReceived:
            guard case .scanning(let since) = phase else { break }
            silence = .armed(lastReport: now, factor: 1)
            noteStable(since: since, now: now)
        case .scanDutyChanged:
            silence = .unarmed
        case .transportFailed(let failure, let reason):
            openFailed(failure, reason: reason, now: now, &out)
        case .bringUpFailed(let reason, let leUnsupported):
            if leUnsupported {
                climb = nil
                settle(.unsupported, "\(reason); LE is required", retryAfter: configuration.maxBackoff, now: now, &out)
            } else {
                fault(reason, cure: .resetController, now: now, &out)
            }
        case .stepFailed(_, let reason):
            fault(reason, cure: .resetController, now: now, &out)
        case .hardwareError(let code):
            fault("Hardware Error event (code 0x\(upperHex(code, digits: 2)))", cure: .resetController, now: now, &out)
        case .commandTimedOut(let reason):
            fault(reason, cure: .resetController, now: now, &out)
        case .transportEnded(let reason):
            if case .idle = phase { break }
            fault(reason, cure: .powerCycle, now: now, &out)
        case .rfkillChanged(let soft, let hard):
            rfkillChanged(soft: soft, hard: hard, now: now, &out)
        case .adapterAdded:
            // Hotplug: the adapter is back. Open it now, whatever the backoff said.
            if case .pending(.open, _) = phase { phase = .pending(.open, at: now) }
            if case .pending(.step(.awaitAdapter, _), _) = phase { phase = .pending(.open, at: now) }
        case .adapterRemoved:
            climb = nil
            openBackoff = configuration.initialBackoff
            settle(.absent, "the adapter was removed", retryAfter: configuration.maxBackoff, now: now, &out)
        case .adapterPoweredOff(let reason):
            if case .idle = phase { break }
            // The kernel says an adapter is down as it removes it, sometimes after the removal itself: still absent.
            if published == .absent { break }
            climb = nil
            openBackoff = configuration.initialBackoff
            if isBlocked {
                blocked(reason, now: now, &out)
            } else {
                settle(.poweredOff, reason, retryAfter: configuration.maxBackoff, now: now, &out)
            }
        case .timePassed:
            break
        }
        runDue(now: now, &out)
        if let deadline = nextDeadline() { out.append(.wait(until: deadline)) }
        return out
    }

    /// Runs a pending operation whose time has come, and fires the silence watchdog.
    private mutating func runDue(now: Duration, _ out: inout [Action]) {
        switch phase {
        case .pending(let operation, let at) where at <= now:
            start(operation, now: now, &out)
        case .busy(let operation, let since) where now - since >= configuration.operationTimeout:
            // The caller never reported an outcome (an rfkill write with no event back, a hung open): bound it.
            let what: String
            switch operation {
            case .open: what = "opening the adapter"
            case .step(let step, _): what = "recovery step \(step)"
            }
            fault(
                "\(what) gave no outcome within \(Self.format(configuration.operationTimeout))",
                cure: .resetController, now: now, &out)
            if case .pending(let next, let at) = phase, at <= now { start(next, now: now, &out) }
        case .scanning(let since):
            noteStable(since: since, now: now)
            if case .armed(let lastReport, let factor) = silence, let deadline = silenceDeadline(since: since),
                deadline <= now
            {
                statistics.silences += 1
                let quiet = now - max(lastReport ?? since, since)
                silence = .armed(lastReport: lastReport, factor: min(factor * 2, configuration.silenceTimeoutMaxFactor))
                fault(
                    "no advertising reports for \(Self.format(quiet)) while scanning", cure: .reenableScan,
                    now: now, &out)
                if case .pending(let operation, let at) = phase, at <= now { start(operation, now: now, &out) }
            }
        default:
            break
        }
    }

    private mutating func start(_ operation: Operation, now: Duration, _ out: inout [Action]) {
        phase = .busy(operation, since: now)
        switch operation {
        case .open:
            out.append(.open)
        case .step(let step, let attempt):
            let bound = bound(step)
            statistics.attempts[step, default: 0] += 1
            let why = climb.map { ": \($0.fault)" } ?? ""
            publish(.resetting, "recovery step \(step) (attempt \(attempt) of \(bound))\(why)", &out)
            out.append(.run(step, attempt: attempt, of: bound))
        }
    }

    private mutating func beginOpen(now: Duration, _ out: inout [Action]) {
        openBackoff = configuration.initialBackoff
        phase = .pending(.open, at: now)
    }

    private mutating func scanEnabled(now: Duration, _ out: inout [Action]) {
        guard case .busy(let operation, _) = phase else { return }
        publish(.poweredOn, nil, &out)
        if let c = climb {
            let step: Step
            switch operation {
            case .open: step = .awaitAdapter
            case .step(let s, _): step = s
            }
            let took = now - c.startedAt
            statistics.recoveries[step, default: 0] += 1
            statistics.lastTimeToRecover = took
            statistics.totalTimeToRecover += took
            escalation = step
            out.append(.recovered(by: step, after: took))
        }
        climb = nil
        openBackoff = configuration.initialBackoff
        phase = .scanning(since: now)
    }

    /// Scanning for `stableAfter` without a fault: the adapter is healthy, the climb backoff and the escalation
    /// start over.
    private mutating func noteStable(since: Duration, now: Duration) {
        if now - since >= configuration.stableAfter {
            escalation = nil
            climbBackoff = .zero
        }
    }

    private func silenceDeadline(since: Duration) -> Duration? {
        guard case .armed(let lastReport, let factor) = silence else { return nil }
        // Counted from the last report, or from the (re)enable if none came since.
        return max(lastReport ?? since, since) + configuration.silenceTimeout * factor
    }

    /// A fault: start a climb at `cure` (or above the step that cured the last fault, if the adapter was not
    /// stable since), or, inside a climb, count the attempt as failed and go on.
    private mutating func fault(_ reason: String, cure: Step, now: Duration, _ out: inout [Action]) {
        switch phase {
        case .idle:
            return
        case .busy(.step(let step, let attempt), _) where climb != nil:
            climb?.fault = reason
            // A lost transport cannot be cured by the steps below a power cycle.
            let floor = max(cure == .powerCycle ? .powerCycle : step, step)
            if floor == step, attempt < bound(step) {
                phase = .pending(.step(step, attempt: attempt + 1), at: now + backoff(attempt))
            } else {
                advance(after: floor == step ? step : Self.before(floor), now: now, &out)
            }
            return
        case .busy(.open, _) where climb != nil:
            // The adapter is still not usable after waiting for it: the next full climb, after the backoff.
            climb?.fault = reason
            exhaust(now: now, &out)
            return
        case .pending:
            // Already waiting to act (a late echo of the fault that put us here).
            climb?.fault = reason
            return
        default:
            break
        }
        // A new climb.
        if case .scanning(let since) = phase { noteStable(since: since, now: now) }
        var from = cure
        if let e = escalation, e != .awaitAdapter {
            // Above the step that cured the last fault; if nothing above may run here, that step again.
            let above = Self.after(e).flatMap { firstAvailable(from: $0) } ?? e
            if above > from { from = above }
        }
        let at = max(now, (lastClimbStart ?? now - climbBackoff - .seconds(1)) + climbBackoff)
        climbBackoff =
            climbBackoff == .zero
            ? configuration.initialBackoff : min(climbBackoff * 2, configuration.maxBackoff)
        lastClimbStart = at
        statistics.climbs += 1
        climb = Climb(fault: reason, startedAt: now, from: from)
        guard let first = firstAvailable(from: from) else {
            exhaust(now: now, &out)
            return
        }
        if at > now { publish(.resetting, "\(reason); recovery starts at \(first) in \(Self.format(at - now))", &out) }
        phase = .pending(.step(first, attempt: 1), at: at)
    }

    /// The step after `step` that may run here, or the end of the ladder.
    private mutating func advance(after step: Step, now: Duration, _ out: inout [Action]) {
        guard let next = Self.after(step), let first = firstAvailable(from: next) else {
            exhaust(now: now, &out)
            return
        }
        phase = .pending(.step(first, attempt: 1), at: now)
    }

    /// Every step failed: publish a clear state and wait for the adapter to return (hotplug, rfkill), with a slow
    /// periodic open in case it returns unannounced.
    private mutating func exhaust(now: Duration, _ out: inout [Action]) {
        statistics.exhausted += 1
        let why = climb.map { $0.fault } ?? "the adapter does not answer"
        let status: Status = isBlocked ? .blocked : .poweredOff
        publish(
            status,
            "recovery failed (\(why)); waiting for the adapter to return, next try in "
                + Self.format(configuration.maxBackoff), &out)
        statistics.attempts[.awaitAdapter, default: 0] += 1
        phase = .pending(.open, at: now + configuration.maxBackoff)
    }

    private mutating func openFailed(_ failure: OpenFailure, reason: String, now: Duration, _ out: inout [Action]) {
        if case .busy(.step(let step, _), _) = phase, climb != nil, failure == .other {
            // A power cycle that could not reopen: that attempt failed.
            fault(reason, cure: step, now: now, &out)
            return
        }
        climb = climb.map {
            var c = $0
            c.fault = reason
            return c
        }
        switch failure {
        case .absent:
            settle(.absent, reason, retryAfter: nextOpenBackoff(), now: now, &out)
        case .permissionDenied:
            settle(.unauthorized, reason, retryAfter: configuration.maxBackoff, now: now, &out)
        case .unsupported:
            settle(.unsupported, reason, retryAfter: configuration.maxBackoff, now: now, &out)
        case .blocked:
            // The open says blocked before rfkill's own event has come: a soft block until rfkill says which.
            if radio == .unblocked { radio = .softBlocked(unblockTried: false) }
            blocked(reason, now: now, &out)
        case .other:
            settle(.poweredOff, reason, retryAfter: nextOpenBackoff(), now: now, &out)
        }
    }

    private mutating func rfkillChanged(soft: Bool, hard: Bool, now: Duration, _ out: inout [Action]) {
        let was = isBlocked
        radio = radio.changed(soft: soft, hard: hard)
        if isBlocked, !was {
            blocked("rfkill blocks the radio (\(radio == .hardBlocked ? "hard" : "soft"))", now: now, &out)
        } else if !isBlocked, was {
            // Unblocked: open now (an unblock step in flight has done its work; the open reports the rest).
            switch phase {
            case .pending, .busy(.step(.rfkillUnblock, _), _):
                phase = .pending(.open, at: now)
            default:
                break
            }
        }
    }

    /// The radio is blocked: unblock it if policy allows (a bounded step), else wait for rfkill to change.
    private mutating func blocked(_ reason: String, now: Duration, _ out: inout [Action]) {
        if configuration.allowRfkillUnblock, radio == .softBlocked(unblockTried: false) {
            // Once per block: if unblocking does not stick, someone means it; wait for rfkill to change.
            radio = .softBlocked(unblockTried: true)
            if climb == nil {
                climb = Climb(fault: reason, startedAt: now, from: .rfkillUnblock)
                statistics.climbs += 1
            }
            phase = .pending(.step(.rfkillUnblock, attempt: 1), at: now)
            return
        }
        let policy =
            radio == .hardBlocked
            ? "a hard block (switch) cannot be cleared by software"
            : configuration.allowRfkillUnblock ? "unblocking did not help" : "policy does not allow unblocking"
        settle(
            .blocked, "\(reason); \(policy); waiting for rfkill", retryAfter: configuration.maxBackoff,
            now: now, &out)
    }

    /// A state that waits for the world to change: published, with a bounded periodic retry of the open.
    private mutating func settle(
        _ status: Status, _ reason: String, retryAfter: Duration, now: Duration,
        _ out: inout [Action]
    ) {
        publish(status, "\(reason); next try in \(Self.format(retryAfter))", &out)
        phase = .pending(.open, at: now + retryAfter)
    }

    private mutating func nextOpenBackoff() -> Duration {
        let d = max(openBackoff, configuration.initialBackoff)
        openBackoff = min(d * 2, configuration.maxBackoff)
        return d
    }

    private mutating func publish(_ status: Status, _ reason: String?, _ out: inout [Action]) {
        // Resetting is published on every step (each names its step); other states when they or their reason change
        // (a waiting state names its next try, whose delay grows with the backoff: the topic must not say "1 s" for
        // 30 s). At most once per retry, so bounded by the backoff.
        if status == published, status != .resetting, reason == publishedReason { return }
        published = status
        publishedReason = reason
        out.append(.publish(status, reason: reason))
    }

    private func nextDeadline() -> Duration? {
        switch phase {
        case .pending(_, let at): at
        case .scanning(let since): silenceDeadline(since: since)
        case .busy(_, let since): since + configuration.operationTimeout
        default: nil
        }
    }

    private func bound(_ step: Step) -> Int { max(1, configuration.attempts[step] ?? 1) }

    private func backoff(_ failedAttempts: Int) -> Duration {
        var d = configuration.initialBackoff
        for _ in 1..<max(1, failedAttempts) { d = min(d * 2, configuration.maxBackoff) }
        return min(d, configuration.maxBackoff)
    }

    /// The first step at or above `step` that may run here (policy and rfkill decide the optional ones).
    private func firstAvailable(from step: Step) -> Step? {
        var s: Step? = step
        while let c = s, c != .awaitAdapter {
            switch c {
            case .rfkillUnblock where !(configuration.allowRfkillUnblock && radio.isSoftBlocked):
                s = Self.after(c)
            case .usbReset where !configuration.allowUSBReset: s = Self.after(c)
            default: return c
            }
        }
        return nil
    }

    static func after(_ step: Step) -> Step? {
        let all = Step.allCases
        let i = all.firstIndex(of: step)! + 1
        return i < all.count ? all[i] : nil
    }

    static func before(_ step: Step) -> Step {
        let all = Step.allCases
        return all[max(0, all.firstIndex(of: step)! - 1)]
    }

    static func format(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        if ms % 1000 == 0 { return "\(ms / 1000) s" }
        let frac = String(ms % 1000)
        return "\(ms / 1000).\(String(repeating: "0", count: 3 - frac.count))\(frac) s"
    }
}
