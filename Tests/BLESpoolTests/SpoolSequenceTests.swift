import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLESpool

@Suite("seq, order and replay")
struct SpoolSequenceTests {
    @Test func seqIsAssignedAtCommitContiguousAndKeepsEveryField() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        spool.append(sample(1))
        spool.append(sample(2))
        #expect(try spool.everything().isEmpty, "nothing is visible to the publisher before the commit")
        #expect(try spool.commit() == 1...2)
        let s = state("connected", ts: 1_700_000_123.25)
        #expect(try spool.appendDurably(s) == 3)
        let all = try spool.everything()
        #expect(all.map(\.seq) == [1, 2, 3])
        #expect(all[2].reading == s)
        #expect(all[0].reading.expiry == 30)
        #expect(all[2].reading.expiry == nil)
        #expect(try spool.commit() == nil, "an empty commit assigns nothing")
    }

    @Test func theCommitObserverHearsEveryDurableRangeOnceAndOnlyAfterItsCommit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let heard = Locked<[ClosedRange<UInt64>]>([])
        do {
            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            spool.observeCommits { range in heard.withLock { $0.append(range) } }
            spool.append(sample(1))
            spool.append(sample(2))
            #expect(heard.withLock { $0 }.isEmpty, "appended is not durable")
            try spool.commit()
            #expect(try spool.appendDurably(state("connected")) == 3)
            spool.acknowledge([1])
            try spool.commit()
        }
        #expect(heard.withLock { $0 } == [1...2, 3...3], "a commit of acknowledgements alone issues no seq")
        // What it heard is what the reopened spool holds (less the acknowledged).
        let reopened = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        #expect(try reopened.everything().map(\.seq) == [2, 3])
    }

    @Test func seqIsMonotonicAcrossReopenAndNeverReusedAfterTheTableEmpties() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath)
        do {
            let spool = try Spool(configuration: config)
            for n in 0..<5 { spool.append(sample(n)) }
            #expect(try spool.commit() == 1...5)
            spool.acknowledge(1...5)
            try spool.commit()
            #expect(try spool.everything().isEmpty)
            #expect(spool.statistics.depth == 0)
        }
        do {
            let spool = try Spool(configuration: config)
            spool.append(sample(6))
            #expect(try spool.commit() == 6...6, "the table was empty, the counter was not")
        }
        do {
            let spool = try Spool(configuration: config)
            #expect(try spool.everything().map(\.seq) == [6])
            #expect(spool.statistics.lastSeq == 6)
        }
    }

    @Test func aDeletedDatabaseContinuesAboveTheReservationInsteadOfRestartingAtOne() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath)
        do {
            let spool = try Spool(configuration: config)
            for n in 0..<3 { spool.append(sample(n)) }
            try spool.commit()
        }
        for suffix in ["", "-wal"] { try? FileManager.default.removeItem(atPath: dir.spoolPath + suffix) }
        let spool = try Spool(configuration: config)
        spool.append(sample(9))
        let range = try #require(try spool.commit())
        #expect(range.lowerBound > 3)
        #expect(spool.statistics.openReport.seqFromReservation)
    }

    @Test func orderIsSeqNotTimestampWhenTheWallClockJumpsBackwards() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        // Unsynchronised boot clock (1970), then NTP steps forward, then a step backwards of an hour.
        let stamps: [Double] = [12.0, 13.0, 1_700_000_000, 1_700_000_001, 1_699_996_401, 1_699_996_402]
        for (n, ts) in stamps.enumerated() { spool.append(sample(n, ts: ts)) }
        try spool.commit()
        let all = try spool.everything()
        #expect(all.map(\.text) == (0..<6).map { "rssi \($0)" })
        #expect(all.map(\.reading.ts) == stamps, "original timestamps are kept, not rewritten")
        #expect(all.map(\.seq) == [1, 2, 3, 4, 5, 6])
    }

    @Test func replayAfterReconnectResumesAtTheOldestUnacknowledgedWhileNewReadingsFlow() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        for n in 0..<10 { spool.append(sample(n, ts: 1000 + Double(n), run: "run-old")) }
        try spool.commit()
        // The publisher sends a window of 4, gets 3 acknowledged, then the broker goes away.
        let window = try spool.pending(after: 0, limit: 4)
        #expect(window.map(\.seq) == [1, 2, 3, 4])
        spool.acknowledge([1, 2, 3])
        // New readings keep arriving during the outage.
        for n in 10..<12 { spool.append(sample(n, ts: 2000, run: "run-new")) }
        try spool.commit()
        // Reconnect: replay from the start of what is left, in order, with the original ts and run.
        var replayed: [SpooledReading] = []
        var cursor: UInt64 = 0
        while case let batch = try spool.pending(after: cursor, limit: 3), !batch.isEmpty {
            replayed += batch
            cursor = batch.last!.seq
        }
        #expect(replayed.map(\.seq) == Array(4...12))
        #expect(replayed.first?.reading.ts == 1003)
        #expect(replayed.first?.reading.run == "run-old")
        #expect(replayed.last?.reading.run == "run-new")
    }

    /// Acknowledged rows stay in the file until the next commit deletes them. A window of them in front of the backlog
    /// once read as the end of the spool (the limit was applied before they were left out), and a publisher with
    /// nothing new to commit stopped there: a refusal episode's backlog stayed in the spool after the broker allowed it.
    @Test func aWindowOfAcknowledgedRowsNotYetDeletedIsReadPastNotTakenForTheEnd() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        for n in 0..<20 { spool.append(sample(n)) }
        try spool.commit()
        spool.acknowledge(1...8)
        #expect(try spool.pending(after: 0, limit: 4).map(\.seq) == [9, 10, 11, 12])
        #expect(try spool.pending(after: 0, limit: 8).map(\.seq) == Array(9...16))
        spool.acknowledge([10, 12, 14])
        #expect(try spool.pending(after: 8, limit: 5).map(\.seq) == [9, 11, 13, 15, 16])
        spool.acknowledge(15...20)
        #expect(try spool.pending(after: 13, limit: 4).isEmpty, "only acknowledged rows behind: the end")
        #expect(try spool.pending(after: 0, limit: 100).map(\.seq) == [9, 11, 13])
    }

    @Test func acknowledgementsOfDroppedOrUnknownSeqsAreHarmless() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        spool.append(sample(1))
        try spool.commit()
        spool.acknowledge([1, 99])
        try spool.commit()
        #expect(try spool.everything().isEmpty)
        #expect(spool.statistics.lastError == nil)
    }

    @Test func theServiceCommitsEachWindowAndOnceMoreWhenCancelled() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, commitWindow: .seconds(5)))
        #expect(spool.configuration.effectiveCommitWindow == .milliseconds(100), "the window is clamped to 100 ms")
        let clock = ManualClock()
        let service = Task { await spool.run(clock: clock) }
        spool.append(sample(1))
        await clock.untilSleeping()  // the window the sample opened
        #expect(try spool.everything().isEmpty)
        clock.advance(by: .milliseconds(100))
        while spool.statistics.commits == 0 { await Task.yield() }
        #expect(try spool.everything().map(\.seq) == [1])
        spool.append(sample(2))
        service.cancel()
        await service.value
        #expect(try spool.everything().map(\.seq) == [1, 2], "shutdown commits what was still buffered")
    }

    /// Issue #42, "idle is idle": a spool with nothing to commit sleeps on no clock (it woke every window, ten times
    /// a second, on every idle gateway); the next reading opens a window, and a reading still waits at most one.
    @Test func aSpoolWithNothingToCommitSleepsOnNoClockUntilTheNextReadingOpensAWindow() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, commitWindow: .milliseconds(100)))
        let clock = ManualClock()
        let service = Task { await spool.run(clock: clock) }
        defer { service.cancel() }
        func idle() -> Bool { spool.bufferLock.withLock { spool.runIsIdle } }
        try await waitUntil("the service waits for work") { idle() }
        #expect(clock.advance(by: .seconds(60)) == 0, "a minute with nothing to commit wakes nobody")
        #expect(clock.sleepsBegun == 0)

        spool.append(sample(1))
        await clock.untilSleeping()
        #expect(clock.nextDeadline == clock.now() + .milliseconds(100), "the window starts with the reading")
        #expect(try spool.everything().isEmpty)
        clock.advance(by: .milliseconds(100))
        try await waitUntil("the window's commit") { spool.statistics.commits == 1 }
        #expect(try spool.everything().map(\.seq) == [1])

        // An acknowledgement is work too: it is deleted with the next window's commit, then the spool is idle again.
        try await waitUntil("idle after the commit") { idle() }
        spool.acknowledge([1])
        #expect(!idle(), "the acknowledgement woke the service")
        await clock.untilSleeping(after: 1)
        clock.advance(by: .milliseconds(100))
        try await waitUntil("the acknowledgement's commit, then idle") { spool.statistics.commits == 2 && idle() }
        #expect(try spool.everything().isEmpty)
        #expect(clock.advance(by: .seconds(60)) == 0, "idle again")
    }

    @Test func anUrgentReadingIsCommittedWithinTheUrgentWindowWithWhatWasBufferedBeforeIt() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(
            configuration: SpoolConfiguration(
                path: dir.spoolPath, commitWindow: .milliseconds(100),
                urgentCommitWindow: .milliseconds(5)))
        let clock = ManualClock()
        let service = Task { await spool.run(clock: clock) }
        defer { service.cancel() }
        spool.append(sample(1))
        await clock.untilSleeping()  // the window the sample opened
        // Virtual time moves a millisecond at a time; a step that wakes the service waits until it sleeps again or,
        // with nothing left to commit, waits for work: it has done what it woke for.
        func step(to ms: Int) async throws {
            while clock.now() < .milliseconds(ms) {
                let begun = clock.sleepsBegun
                if clock.advance(by: .milliseconds(1)) > 0 {
                    try await waitUntil("the service asleep again") {
                        clock.sleepsBegun > begun || spool.bufferLock.withLock { spool.runIsIdle }
                    }
                }
            }
        }
        try await step(to: 50)
        #expect(spool.statistics.commits == 0, "a sample waits for the end of the commit window")
        let begun = clock.sleepsBegun
        spool.append(sample(2), urgent: true)
        await clock.untilSleeping(after: begun)  // woken by it: now gathering for the urgent window
        var committedAfter: Int?
        for ms in 51...99 {
            try await step(to: ms)
            if spool.statistics.commits > 0 {
                committedAfter = ms - 50
                break
            }
        }
        // Within the urgent window (5 ms, and a step for the service to pick the urgent reading up), long before the
        // window's end.
        #expect(
            committedAfter.map { $0 <= 6 } == true,
            "committed \(committedAfter.map { "\($0) ms" } ?? "not at all") after")
        #expect(try spool.everything().map(\.seq) == [1, 2], "with the sample buffered before it, in order")
    }
}
