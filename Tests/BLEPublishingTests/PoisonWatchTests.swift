import BLESpool
import Testing

@testable import BLEPublishing

/// A 3.1.1 broker refuses a publish by closing the connection; the watch names the reading only when the same one was
/// the oldest lost at `limit` losses in a row.
@Suite struct PoisonWatchTests {
    static func reading(_ seq: UInt64) -> SpooledReading {
        SpooledReading(
            seq: seq,
            reading: Reading(
                .sample, topic: "t/gw/beacons/x", body: Array(#"{"n":1}"#.utf8), qos: 1, ts: 1.7e9,
                clockSynchronized: true, run: "00c0ffee"))
    }

    @Test func theSameOldestLostReadingAtLimitLossesInARowIsSetAside() {
        var w = PoisonWatch(limit: 3)
        for loss in 1...3 {
            // Each connection loses the suspect and the readings behind it; the oldest is what counts.
            w.lost(Self.reading(12))
            w.lost(Self.reading(7))
            w.lost(Self.reading(9))
            let verdict = w.connected()
            if loss < 3 {
                #expect(verdict == nil)
                #expect(w.suspicion == .suspect(seq: 7, losses: loss))
            } else {
                #expect(verdict?.seq == 7)
                #expect(w.suspicion == .none)
            }
        }
    }

    @Test func anAcknowledgementOrADifferentOldestStartsTheCountAgain() {
        var w = PoisonWatch(limit: 2)
        w.lost(Self.reading(7))
        #expect(w.connected() == nil)
        w.acknowledged(7)  // it went through after all: not what closes the connection
        #expect(w.suspicion == .none)
        w.lost(Self.reading(7))
        #expect(w.connected() == nil, "one loss since the acknowledgement")
        w.lost(Self.reading(8))
        #expect(w.connected() == nil, "another reading was the oldest lost")
        #expect(w.suspicion == .suspect(seq: 8, losses: 1))
        // A connection that lost nothing judges nothing and forgets nothing.
        #expect(w.connected() == nil)
        #expect(w.suspicion == .suspect(seq: 8, losses: 1))
        w.lost(Self.reading(8))
        #expect(w.connected()?.seq == 8)
    }
}
