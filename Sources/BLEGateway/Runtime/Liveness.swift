/// Whether the gateway's two moving parts make progress, judged for the service manager's watchdog: it is fed only
/// while both do, so a wedged publisher or scanner gets the process restarted (systemd's `WatchdogSec=`), not a
/// timer that would keep a stuck gateway alive.
///
/// - The publisher makes progress when the broker acknowledges readings, or has nothing to do: nothing pending, not
///   connected (the MQTT client's reconnect loop owns that), or holding back on a refusal's backoff.
/// - The scanner makes progress when reports arrive or the adapter's recovery ladder acts. A silent radio is the
///   ladder's to handle, so while neither happens the judge looks at what the ladder waits for: its next deadline (the
///   silence watchdog, a retry, a step's bound). Passed by more than `scannerLimit` with nothing done, the ladder
///   itself is wedged: stalled, within the deadline plus the limit (the silence timeout plus two minutes by
///   default), in exclusive and in shared mode alike. With nothing ahead (scanning, no report heard yet, so no
///   silence watchdog armed: an empty room) there is nothing to judge. Sources without a ladder (a capture) are not
///   judged. With two adapters each ladder is judged on its own: one adapter's reports do not hide the other's
///   wedged ladder.
///
/// A pure machine: samples in, a verdict out; the caller samples on its clock and does the I/O.
struct Liveness: Sendable {
    struct Sample: Sendable, Equatable {
        var acknowledged: UInt64
        var pending: Int
        var connected: Bool
        var holdingBack: Bool
        /// Each ladder's reports, attempts and silences and its next deadline (the sampler's clock), in the same
        /// order at every sample; empty when the source has no ladder.
        var ladders: [LadderProgress]
    }

    enum Part: String, Sendable, Equatable {
        case publisher, scanner
    }

    enum Verdict: Sendable, Equatable {
        case alive
        /// No progress by `part` since `since` (the caller's clock), longer than its limit.
        case stalled(Part, since: Duration)
    }

    enum State: Sendable, Equatable {
        case waitingForFirstSample
        /// Since when the publisher, and each ladder, last made progress.
        case watching(last: Sample, publisherProgress: Duration, ladderProgress: [Duration])
    }

    let publisherLimit: Duration
    let scannerLimit: Duration
    private(set) var state = State.waitingForFirstSample

    init(publisherLimit: Duration, scannerLimit: Duration) {
        self.publisherLimit = publisherLimit
        self.scannerLimit = scannerLimit
    }

    mutating func observe(_ s: Sample, at now: Duration) -> Verdict {
        guard case .watching(let last, var publisher, let before) = state else {
            state = .watching(last: s, publisherProgress: now, ladderProgress: s.ladders.map { _ in now })
            return .alive
        }
        if s.acknowledged != last.acknowledged || s.pending == 0 || !s.connected || s.holdingBack {
            publisher = now
        }
        // A ladder that acted, or waits for nothing but events, makes progress; so does one not sampled before.
        let ladders = s.ladders.enumerated().map { i, ladder in
            i < before.count && i < last.ladders.count && ladder.activity == last.ladders[i].activity
                && ladder.deadline != nil ? before[i] : now
        }
        state = .watching(last: s, publisherProgress: publisher, ladderProgress: ladders)
        if now - publisher > publisherLimit { return .stalled(.publisher, since: publisher) }
        // Nothing done since its progress, and its own deadline passed that long ago.
        let wedged = zip(s.ladders, ladders).compactMap { ladder, progress in
            ladder.deadline.map { max(progress, $0) }.flatMap { now - $0 > scannerLimit ? $0 : nil }
        }
        if let since = wedged.min() { return .stalled(.scanner, since: since) }
        return .alive
    }
}
