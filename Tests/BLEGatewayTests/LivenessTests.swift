import Testing

@testable import BLEGateway

/// The watchdog's judge, with literal samples: idle is not stalled, a publisher with readings and a connection but no
/// acknowledgement is, and so is a scanner whose reports and recovery ladder stand still; progress ends a stall.
struct LivenessTests {
    static func sample(
        acked: UInt64 = 0, pending: Int = 0, connected: Bool = true, holdingBack: Bool = false,
        scan: Int? = 0
    ) -> Liveness.Sample {
        Liveness.Sample(
            acknowledged: acked, pending: pending, connected: connected, holdingBack: holdingBack,
            scanActivity: scan)
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
            s.scanActivity = t
            #expect(l.observe(s, at: .seconds(t)) == .alive, "\(why)")
        }
    }

    @Test func aScannerWhoseReportsAndLadderStandStillStallsAfterItsLimitAndASourceWithoutALadderIsNotJudged() {
        var l = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(100))
        _ = l.observe(Self.sample(scan: 40), at: .zero)
        #expect(l.observe(Self.sample(scan: 40), at: .seconds(100)) == .alive)
        #expect(l.observe(Self.sample(scan: 40), at: .seconds(101)) == .stalled(.scanner, since: .zero))
        #expect(l.observe(Self.sample(scan: 41), at: .seconds(102)) == .alive)
        var capture = Liveness(publisherLimit: .seconds(10), scannerLimit: .seconds(100))
        _ = capture.observe(Self.sample(scan: nil), at: .zero)
        #expect(capture.observe(Self.sample(scan: nil), at: .seconds(500)) == .alive)
    }
}
