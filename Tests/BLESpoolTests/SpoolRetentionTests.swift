import Foundation
import Testing

@testable import BLESpool

/// Samples of one size: 10-byte body + 4-byte topic + 2-byte run + 32 overhead = 48 bytes charged.
private func fixed(_ n: Int, _ topic: String) -> Reading {
    Reading(
        .sample, topic: topic, body: Array(String(format: "%010d", n).utf8), qos: 0, ts: 0,
        clockSynchronized: true, run: "r1")
}

private func event(_ n: Int) -> Reading {
    Reading(
        .state, topic: "gw/state", body: Array(String(format: "state %03d", n).utf8), ts: 0,
        clockSynchronized: true, run: "r1")
}

@Suite("budget: states kept, samples downsampled then dropped oldest first")
struct SpoolRetentionTests {
    @Test func theChargedSizeIsTheVariableFieldsPlusTheRowOverhead() {
        #expect(fixed(1, "gw/a").storedSize == 48)
        #expect(event(1).storedSize == 9 + 8 + 2 + 32)
    }

    @Test func downsamplingKeepsOneInNPerTopicNotPerMergedStream() {
        var d = Downsampler(keepOneIn: 2)
        // a and b interleave: thinning the merged stream would remove every b.
        let removed = ["a", "b", "a", "b", "a", "b"].map { d.removes(topic: $0) }
        #expect(removed == [false, false, true, true, false, false])
        var three = Downsampler(keepOneIn: 3)
        #expect((0..<6).map { _ in three.removes(topic: "x") } == [false, true, true, false, true, true])
    }

    @Test func samplesAreDownsampledFirstThenDroppedOldestFirstWithExactCounters() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath, maxBytes: 4 * 48, trimFraction: 1, keepOneSampleIn: 2)
        do {
            let spool = try Spool(configuration: config)
            for n in 1...8 { spool.append(fixed(n, n % 2 == 1 ? "gw/a" : "gw/b")) }
            #expect(try spool.commit() == 1...8)
            // 384 bytes for 192: per topic keep 1, remove 1, oldest first: 3 and 4, then 7 and 8.
            #expect(try spool.everything().map(\.seq) == [1, 2, 5, 6])
            var drops = try #require(spool.statistics.drops[.sample])
            #expect(drops.downsampled == 4)
            #expect(drops.droppedOldest == 0)

            // Downsampling goes on from where it stopped: 9 and 10 are the first of their topics there, so they are
            // kept, nothing older is left to thin, and the two oldest go.
            spool.append(fixed(9, "gw/a"))
            spool.append(fixed(10, "gw/b"))
            try spool.commit()
            #expect(try spool.everything().map(\.seq) == [5, 6, 9, 10])
            drops = try #require(spool.statistics.drops[.sample])
            #expect(drops.downsampled == 4)
            #expect(drops.droppedOldest == 2)
            #expect(spool.statistics.storedBytes == 4 * 48)
        }
        // The counters are durable, for publishing after a restart too.
        let reopened = try Spool(configuration: config)
        let drops = try #require(reopened.statistics.drops[.sample])
        #expect(drops.downsampled == 4)
        #expect(drops.droppedOldest == 2)
    }

    @Test func stateEventsAreNeverDroppedEvenWhenTheyAloneExceedTheBudget() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, maxBytes: 100, trimFraction: 1))
        for n in 1...3 { try spool.appendDurably(event(n)) }
        for n in 4...7 { spool.append(fixed(n, n % 2 == 0 ? "gw/a" : "gw/b")) }
        try spool.commit()
        for n in 8...12 { try spool.appendDurably(event(n)) }
        let all = try spool.everything()
        #expect(all.allSatisfy { $0.reading.readingClass == .state })
        #expect(all.map(\.seq) == [1, 2, 3, 8, 9, 10, 11, 12])
        let stats = spool.statistics
        #expect(stats.drops[.state] == DropCounters())
        #expect(stats.drops[.sample]?.downsampled == 2, "6 and 7: second of their topics")
        #expect(stats.drops[.sample]?.droppedOldest == 2, "then 4 and 5, oldest first")
        #expect(stats.storedBytes == 8 * event(1).storedSize)
    }

    @Test func hysteresisTrimsBelowTheBudgetSoTheNextCommitsDoNotTrimAgain() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath, maxBytes: 10 * 48, trimFraction: 0.5, keepOneSampleIn: 1)
        let spool = try Spool(configuration: config)
        for n in 1...11 { spool.append(fixed(n, "gw/a")) }
        try spool.commit()
        // 528 > 480: drop down to 240 (5 rows) — 6 dropped, oldest first.
        #expect(try spool.everything().map(\.seq) == Array(7...11))
        #expect(spool.statistics.drops[.sample]?.droppedOldest == 6)
        #expect(spool.statistics.drops[.sample]?.downsampled == 0, "keepOneSampleIn 1 disables downsampling")
        for n in 12...16 { spool.append(fixed(n, "gw/a")) }
        try spool.commit()
        #expect(spool.statistics.drops[.sample]?.droppedOldest == 6, "back at the budget, not above it")
    }

    @Test func theBufferStaysBoundedInMemoryWhileEveryAppendAtTheBoundDropsOne() {
        var buffer = ReadingBuffer()
        var removed = buffer.append(event(0), maxSamples: 3)  // a state at the front: `head` cannot move past it
        for n in 1...10_000 { removed += buffer.append(fixed(n, "gw/a"), maxSamples: 3) }
        #expect(removed == 9_997)
        #expect(buffer.count == 4)
        #expect(buffer.slots <= 4 + 1_025, "emptied slots are compacted away, not kept: \(buffer.slots)")
        #expect(
            buffer.takeAll().map { String(decoding: $0.body, as: UTF8.self) } == [
                "state 000", "0000009998", "0000009999", "0000010000",
            ])
    }

    @Test func theInMemoryBufferDropsItsOldestSamplesButKeepsStatesAndCountsEveryDrop() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath, maxBufferedSamples: 3)
        do {
            let spool = try Spool(configuration: config)
            spool.append(event(0))
            for n in 1...5 { spool.append(fixed(n, "gw/a")) }
            spool.append(event(6))
            #expect(spool.statistics.buffered == 5)
            #expect(spool.statistics.drops[.sample]?.droppedInMemory == 2)
            try spool.commit()
            #expect(
                try spool.everything().map { String(decoding: $0.reading.body, as: UTF8.self) } == [
                    "state 000", "0000000003", "0000000004", "0000000005", "state 006",
                ])
        }
        let reopened = try Spool(configuration: config)
        #expect(reopened.statistics.drops[.sample]?.droppedInMemory == 2)
    }
}
