import Testing

@testable import BLEFleet

@Suite struct SeqStreamTests {
    @Test func retainedOlderSeqsAreNotGaps() {
        // What `watch` got wrong: retained status (seq 1), adapter (seq 2) and a region (seq 57) arrive first,
        // then the live stream continues at 1963. Nothing was lost.
        var s = SeqStream()
        s.receive(run: "r1", seq: 1, retained: true)
        s.receive(run: "r1", seq: 2, retained: true)
        s.receive(run: "r1", seq: 57, retained: true)
        s.receive(run: "r1", seq: 1963, retained: false)
        s.receive(run: "r1", seq: 1964, retained: false)
        #expect(s.gaps == 0)
        #expect(s.missing == 0)
        #expect(s.lastSeq == 1964)
    }

    @Test func aHoleInsideOneRunsLiveStreamCountsItsMissingSeqs() {
        var s = SeqStream()
        #expect(s.receive(run: "r1", seq: 10, retained: false) == .first)
        #expect(s.receive(run: "r1", seq: 11, retained: false) == .next)
        #expect(s.receive(run: "r1", seq: 15, retained: false) == .gap(missing: 3))
        #expect(s.receive(run: "r1", seq: 16, retained: false) == .next)
        #expect(s.gaps == 1)
        #expect(s.missing == 3)
    }

    @Test func aNewRunStartsANewStreamWithoutAGap() {
        var s = SeqStream()
        s.receive(run: "r1", seq: 500, retained: false)
        // The gateway restarted: the spool keeps seq monotonic, but a crash may lose uncommitted samples that never
        // got a seq, so the jump across runs is not counted.
        #expect(s.receive(run: "r2", seq: 900, retained: false) == .first)
        #expect(s.receive(run: "r2", seq: 901, retained: false) == .next)
        #expect(s.gaps == 0)
        #expect(s.run == "r2")
    }

    @Test func redeliveriesAreDuplicatesNotGapsAndTheLastWillIsOutsideTheStream() {
        var s = SeqStream()
        s.receive(run: "r1", seq: 7, retained: false)
        s.receive(run: "r1", seq: 8, retained: false)
        #expect(s.receive(run: "r1", seq: 8, retained: false) == .duplicate)
        #expect(s.receive(run: "r1", seq: 6, retained: false) == .duplicate)
        #expect(s.receive(run: "r1", seq: nil, retained: false) == .notInStream)
        #expect(s.receive(run: "r1", seq: 9, retained: false) == .next)
        #expect(s.duplicates == 2)
        #expect(s.gaps == 0)
    }
}
