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
///   judged.
///
/// A pure machine: samples in, a verdict out; the caller samples on its clock and does the I/O.
struct Liveness: Sendable {
    struct Sample: Sendable, Equatable {
        var acknowledged: UInt64
        var pending: Int
        var connected: Bool
        var holdingBack: Bool
        /// Reports plus the ladder's attempts and silences; nil when the source has no ladder.
        var scanActivity: Int?
        /// The ladder's next deadline (the sampler's clock); nil when it waits for nothing but events.
        var ladderDeadline: Duration? = nil
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
        case watching(last: Sample, publisherProgress: Duration, scannerProgress: Duration)
    }

    let publisherLimit: Duration
    let scannerLimit: Duration
    private(set) var state = State.waitingForFirstSample

    init(publisherLimit: Duration, scannerLimit: Duration) {
        self.publisherLimit = publisherLimit
        self.scannerLimit = scannerLimit
    }

    mutating func observe(_ s: Sample, at now: Duration) -> Verdict {
        guard case .watching(let last, var publisher, var scanner) = state else {
            state = .watching(last: s, publisherProgress: now, scannerProgress: now)
            return .alive
        }
        if s.acknowledged != last.acknowledged || s.pending == 0 || !s.connected || s.holdingBack {
            publisher = now
        }
        if s.scanActivity == nil || s.scanActivity != last.scanActivity || s.ladderDeadline == nil { scanner = now }
        state = .watching(last: s, publisherProgress: publisher, scannerProgress: scanner)
        if now - publisher > publisherLimit { return .stalled(.publisher, since: publisher) }
        // Nothing done since `scanner`, and the ladder's own deadline passed that long ago.
        if let deadline = s.ladderDeadline, now - max(scanner, deadline) > scannerLimit {
            return .stalled(.scanner, since: max(scanner, deadline))
        }
        return .alive
    }
}
