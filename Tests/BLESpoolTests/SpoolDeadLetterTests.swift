import Foundation
import Testing

@testable import BLESpool

/// The dead-letter table: what the broker can never take is kept whole, out of the queue, bounded, across restarts,
/// and can be put back with its seq.
struct SpoolDeadLetterTests {
    static let tooLarge = DeadLetterReason(code: 0x95, name: "Packet too large")

    @Test func aDeadLetterLeavesTheQueueWithTheNextCommitAndSurvivesAReopenWhole() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var seqs: [UInt64] = []
        do {
            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            for n in 1...3 { seqs.append(try spool.appendDurably(state("s\(n)"))) }
            spool.deadLetter(seqs[1], reason: Self.tooLarge, at: 1_700_000_100)
            // Out of the queue at once, before the commit that moves it.
            #expect(try spool.everything().map(\.seq) == [seqs[0], seqs[2]])
            try spool.commit()
            #expect(spool.statistics.depth == 2 && spool.statistics.deadLetters == 1)
        }
        let reopened = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        #expect(try reopened.everything().map(\.seq) == [seqs[0], seqs[2]])
        let letters = try reopened.deadLetters()
        #expect(letters.map(\.spooled.seq) == [seqs[1]])
        #expect(letters.first?.spooled.text == "s2")
        #expect(letters.first?.spooled.reading.retain == true)
        #expect(letters.first?.reason == Self.tooLarge)
        #expect(letters.first?.at == 1_700_000_100)
        #expect(reopened.statistics.deadLetters == 1 && reopened.statistics.deadLetterBytes > 0)
    }

    @Test func theHighestSeqSetAsideIsNeverIssuedAgain() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let last: UInt64
        do {
            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            _ = try spool.appendDurably(state("a"))
            last = try spool.appendDurably(state("b"))
            spool.deadLetter(last, reason: Self.tooLarge, at: 0)
            try spool.commit()
        }
        try? FileManager.default.removeItem(atPath: dir.spoolPath + ".seq")
        let reopened = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        #expect(try reopened.appendDurably(state("c")) > last)
    }

    @Test func theTableKeepsItsBoundByEvictingTheOldestAndCountsThem() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var c = SpoolConfiguration(path: dir.spoolPath)
        c.maxDeadLetters = 3
        let spool = try Spool(configuration: c)
        let seqs = try (1...5).map { try spool.appendDurably(state("s\($0)")) }
        for seq in seqs { spool.deadLetter(seq, reason: Self.tooLarge, at: 0) }
        try spool.commit()
        #expect(try spool.deadLetters().map(\.spooled.seq) == Array(seqs.suffix(3)))
        #expect(spool.statistics.deadLettersEvicted == 2)
        #expect(spool.statistics.depth == 0)

        var small = SpoolConfiguration(path: dir.path + "/bytes.db")
        small.maxDeadLetterBytes = 1
        let bytes = try Spool(configuration: small)
        let two = try (1...2).map { try bytes.appendDurably(state("s\($0)")) }
        for seq in two { bytes.deadLetter(seq, reason: Self.tooLarge, at: 0) }
        try bytes.commit()
        // Beyond the byte bound, down to the newest one (a single letter larger than the bound is still kept).
        #expect(try bytes.deadLetters().map(\.spooled.seq) == [two[1]])
        #expect(bytes.statistics.deadLettersEvicted == 1)
    }

    @Test func requeuedLettersComeBackWithTheirSeqInOrder() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        let seqs = try (1...4).map { try spool.appendDurably(state("s\($0)")) }
        spool.deadLetter(seqs[0], reason: Self.tooLarge, at: 0)
        spool.deadLetter(seqs[2], reason: Self.tooLarge, at: 0)
        try spool.commit()
        #expect(
            try spool.requeueDeadLetters([seqs[2], 9_999]) == 1, "an unknown seq is not an error, and moves nothing")
        #expect(try spool.everything().map(\.seq) == [seqs[1], seqs[2], seqs[3]])
        #expect(try spool.requeueDeadLetters() == 1)
        #expect(try spool.everything().map(\.seq) == seqs)
        #expect(spool.statistics.deadLetters == 0 && spool.statistics.depth == 4)
    }
}
