import Testing

@testable import BLEGateway

/// The watchdog's judge, with literal samples: idle is not stalled, a publisher with readings and a connection but no
/// acknowledgement is, and so is a scanner whose reports and recovery ladder stand still past the ladder's own
/// deadline; an empty room (nothing ahead of the ladder) is not; progress ends a stall.
struct LivenessTests {
    static func sample(
        acked: UInt64 = 0, pending: Int = 0, connected: Bool = true, holdingBack: Bool = false,
        scan: Int? = 0, deadline: Duration? = nil
    ) -> Liveness.Sample {
        Liveness.Sample(
            acknowledged: acked, pending: pending, connected: connected, holdingBack: holdingBack,
            ladders: scan.map { [LadderProgress(activity: $0, deadline: deadline)] } ?? [])
    }

    @Test func aPublisherWithReadingsAndAConnectionButNoAcknowledgementStallsAfterItsLimit() {
        var l = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(1000))
        #expect(l.observe(Self.sample(acked: 5, pending: 3, scan: 1), at: .seconds(0)) == .alive)
        #expect(l.observe(Self.sample(acked: 5, pending: 9, scan: 2), at: .seconds(10)) == .alive)
        #expect(
            l.observe(Self.sample(acked: 5, pending: 12, scan: 3), at: .seconds(11))
                == .stalled(.publisher, since: .seconds(0)))
        // One acknowledgement is progress.
        #expect(l.observe(Self.sample(acked: 6, pending: 12, scan: 4), at: .seconds(12)) == .alive)
    }

    @Test(arguments: [
        ("nothing pending", sample(acked: 5, pending: 0)),
        ("not connected: the client's reconnect owns it", sample(acked: 5, pending: 7, connected: false)),
        ("holding back on a refusal's backoff", sample(acked: 5, pending: 7, holdingBack: true)),
    ])
    func aPublisherWithNothingItCanDoIsNotStalled(_ why: String, _ idle: Liveness.Sample) {
        var l = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(1000))
        _ = l.observe(Self.sample(acked: 5, pending: 7), at: .zero)
        for t in stride(from: 5, through: 60, by: 5) {
            var s = idle
            s.ladders = [LadderProgress(activity: t, deadline: nil)]
            #expect(l.observe(s, at: .seconds(t)) == .alive, "\(why)")
        }
    }

    /// The ladder's silence watchdog is due at 60 s; nothing happens then (no report, no silence counted, no step):
    /// the ladder is wedged, judged at the deadline plus the limit, not after the ladder's whole doubling climb.
    @Test func aScannerWhoseLadderLetsItsOwnDeadlinePassStallsAfterTheLimit() {
        var l = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(120))
        _ = l.observe(Self.sample(scan: 40, deadline: .seconds(60)), at: .zero)
        #expect(l.observe(Self.sample(scan: 40, deadline: .seconds(60)), at: .seconds(150)) == .alive)
        #expect(l.observe(Self.sample(scan: 40, deadline: .seconds(60)), at: .seconds(180)) == .alive)
        #expect(
            l.observe(Self.sample(scan: 40, deadline: .seconds(60)), at: .seconds(181))
                == .stalled(.scanner, since: .seconds(60)))
        // The ladder acts (its silence counted, a new deadline): progress.
        #expect(l.observe(Self.sample(scan: 41, deadline: .seconds(300)), at: .seconds(182)) == .alive)
    }

    /// Two adapters: the primary's ladder hears reports all along, the secondary's lets its deadline pass with
    /// nothing done. Judged on its own, the secondary is stalled at its deadline plus the limit (summed with the
    /// primary's reports, as before, it never was).
    @Test func withTwoAdaptersOneLaddersReportsDoNotHideTheOthersWedgedLadder() {
        var l = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(120))
        func two(_ primary: Int, at t: Int) -> Liveness.Verdict {
            l.observe(
                Liveness.Sample(
                    acknowledged: 0, pending: 0, connected: true, holdingBack: false,
                    ladders: [
                        LadderProgress(activity: primary, deadline: .seconds(t + 60)),
                        LadderProgress(activity: 7, deadline: .seconds(30)),
                    ]), at: .seconds(t))
        }
        for t in stride(from: 0, through: 150, by: 10) { #expect(two(t, at: t) == .alive, "at \(t) s") }
        #expect(two(160, at: 160) == .stalled(.scanner, since: .seconds(30)))
    }

    /// A ladder whose deadline moves on as it acts is alive however long the radio stays silent (the silence
    /// watchdog doubling up to eight timeouts); and with nothing ahead of it (no report ever heard: an empty room),
    /// and for a source without a ladder (a capture), there is nothing to judge.
    @Test func aSilentRadioAnEmptyRoomAndACaptureAreNotStalls() {
        var silent = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(120))
        var activity = 0
        var deadline = Duration.seconds(60)
        var t = Duration.zero
        for factor in [1, 2, 4, 8, 8, 8] {
            // Halfway through the wait (far past the limit since the last activity for the longer ones), then at it.
            let halfway = t + (deadline - t) / 2
            #expect(silent.observe(Self.sample(scan: activity, deadline: deadline), at: halfway) == .alive)
            t = deadline
            #expect(silent.observe(Self.sample(scan: activity, deadline: deadline), at: t) == .alive)
            activity += 1
            deadline = t + .seconds(60 * factor * 2)
        }
        var empty = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(120))
        _ = empty.observe(Self.sample(scan: 0, deadline: nil), at: .zero)
        #expect(empty.observe(Self.sample(scan: 0, deadline: nil), at: .seconds(3600)) == .alive)
        var capture = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(100))
        _ = capture.observe(Self.sample(scan: nil), at: .zero)
        #expect(capture.observe(Self.sample(scan: nil), at: .seconds(500)) == .alive)
    }
}
