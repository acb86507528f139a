import BLETestSupport
import Foundation
import Testing

@testable import BLESpool

private func big(_ n: Int) -> Reading {
    Reading(
        .sample, topic: "gw/beacon/a", body: Array(String(format: "%0200d", n).utf8), qos: 0, ts: 0,
        clockSynchronized: true, run: "r1")
}

@Suite("disk full: a clear error, nothing corrupted, bounded memory, recovery", .serialized)
struct SpoolDiskFullTests {
    @Test func maxPageCountGivesDiskFullKeepsTheBatchBoundedAndRecoversWhenPagesAreFreed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath, maxBufferedSamples: 150, maxPageCount: 24)
        let spool = try Spool(configuration: config)
        var n = 0
        var committed: [UInt64] = []
        var failure: SpoolError?
        for _ in 0..<100 {
            for _ in 0..<100 {
                n += 1
                spool.append(big(n))
            }
            do { committed += Array(try #require(try spool.commit())) } catch let error as SpoolError {
                failure = error
                break
            }
        }
        let error = try #require(failure)
        #expect(error.code == .diskFull)
        #expect(error.sqlite?.primary == .full)
        #expect(error.description.contains("SQLITE_FULL"), "\(error)")
        #expect(spool.statistics.lastError == error)
        #expect(spool.statistics.buffered == 100, "the failed batch is kept, not lost")
        #expect(try spool.everything().map(\.seq) == committed, "what was committed is intact")

        // Still full: the buffer stays within its bound by dropping its oldest samples, and counts them.
        for _ in 0..<100 {
            n += 1
            spool.append(big(n))
        }
        #expect(spool.statistics.buffered == 150)
        #expect(spool.statistics.drops[.sample]?.droppedInMemory == 50)

        // The publisher delivers the backlog: its deletions free the pages the buffered readings need.
        spool.acknowledge(committed)
        let range = try #require(try spool.commit())
        #expect(range == UInt64(committed.count + 1)...UInt64(committed.count + 150), "seq continues without a gap")
        #expect(try spool.everything().map(\.text) == ((n - 149)...n).map { String(format: "%0200d", $0) })
        #expect(spool.statistics.lastError == nil)
        #expect(spool.statistics.drops[.sample]?.droppedInMemory == 50)
        _ = consume spool  // close, then reopen with quick_check
        let reopened = try Spool(configuration: config)
        #expect(reopened.statistics.openReport.corruption == nil)
        #expect(try reopened.everything().count == 150)
    }

    /// A file full of states (no sample to make room with).
    @Test func aStateEventOnAFullDiskStaysBufferedInOrderAndBeyondTheBoundIsRefusedNotDropped() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var committed: [UInt64] = []
        do {
            let filling = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, maxPageCount: 16))
            var n = 0
            // Until not even one more state fits.
            while n < 100_000, let seq = try? filling.appendDurably(state(String(format: "%0200d", n))) {
                n += 1
                committed.append(seq)
            }
            #expect(filling.statistics.lastError?.code == .diskFull)
        }
        let config = SpoolConfiguration(path: dir.spoolPath, maxBufferedStates: 2, maxPageCount: 16)
        let spool = try Spool(configuration: config)
        for _ in 0..<50 { spool.append(big(0)) }
        #expect(throws: SpoolError.self) { try spool.commit() }
        #expect(spool.statistics.lastError?.code == .diskFull)
        let buffered = spool.statistics.buffered

        // Taken, but not durable: the error says so, and the event waits in the buffer behind the samples.
        #expect { try spool.appendDurably(state("adapter down")) } throws: { ($0 as? SpoolError)?.code == .diskFull }
        #expect { try spool.appendDurably(state("adapter up")) } throws: { ($0 as? SpoolError)?.code == .diskFull }
        // The bound is reached: refused, and the producer still has it.
        #expect { try spool.appendDurably(state("region enter")) } throws: { ($0 as? SpoolError)?.code == .bufferFull }
        #expect(spool.append(state("region exit")) == false)
        #expect(spool.append(big(0)) == true, "samples are always taken")
        #expect(spool.statistics.buffered == buffered + 3)

        spool.acknowledge(committed)
        let range = try #require(try spool.commit())
        let rows = try spool.everything()
        #expect(rows.map(\.seq) == Array(range))
        #expect(rows.filter { $0.reading.readingClass == .state }.map(\.text) == ["adapter down", "adapter up"])
        #expect(rows.suffix(3).map(\.text) == ["adapter down", "adapter up", String(format: "%0200d", 0)])
        // The two refused are counted as the state drops health publishes (spool.dropped_states).
        #expect(spool.statistics.drops[.state]?.droppedInMemory == 2)
    }

    @Test(
        .enabled(if: TestDependency.runs(Tmpfs.canMount), "needs permission to mount a tmpfs (root or CAP_SYS_ADMIN)"))
    func aRealFullFileSystemGivesDiskFullAndCommitsOnceSpaceReturns() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try #require(Tmpfs.mount(size: "1m", on: dir.path))
        defer { Tmpfs.unmount(dir.path) }
        let config = SpoolConfiguration(path: dir.spoolPath)
        var spool: Spool? = try Spool(configuration: config)
        for n in 1...10 { spool!.append(big(n)) }
        #expect(try spool!.commit() == 1...10)

        // Fill the file system with another file until ENOSPC.
        let filler = dir.path + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: filler))
        let chunk = Data(repeating: 0, count: 4096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try? handle.close()

        for n in 11...2010 { spool!.append(big(n)) }
        #expect(throws: SpoolError.self) { try spool!.commit() }
        let error = try #require(spool!.statistics.lastError)
        #expect(error.code == .diskFull, "\(error)")
        #expect(spool!.statistics.buffered == 2000)
        #expect(try spool!.everything().map(\.seq) == Array(1...10), "the committed readings are untouched")

        // Space returns: the next commit takes everything, in order, with the next seqs.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try spool!.commit() == 11...2010)
        #expect(spool!.statistics.lastError == nil)
        spool = nil
        let reopened = try Spool(configuration: config)
        #expect(reopened.statistics.openReport.corruption == nil)
        let all = try reopened.everything()
        #expect(all.map(\.seq) == Array(1...2010))
        #expect(all.allSatisfy { $0.text == String(format: "%0200d", Int($0.seq)) })
    }

    /// Something else filled the file system (journald, the broker's persistence): states still get in, by removing
    /// the oldest samples, which are counted; samples wait in memory; everything resumes when space returns.
    @Test(
        .enabled(if: TestDependency.runs(Tmpfs.canMount), "needs permission to mount a tmpfs (root or CAP_SYS_ADMIN)"))
    func aFileSystemFilledByOthersMakesRoomForStatesByDroppingTheOldestSamples() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try #require(Tmpfs.mount(size: "4m", on: dir.path))
        defer { Tmpfs.unmount(dir.path) }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        for n in 1...3000 { spool.append(big(n)) }
        #expect(try spool.commit() == 1...3000)

        let filler = dir.path + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: filler))
        let chunk = Data(repeating: 0, count: 4096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try? handle.close()

        // Samples alone: disk full, kept in memory.
        for n in 3001...3500 { spool.append(big(n)) }
        #expect(throws: SpoolError.self) { try spool.commit() }
        #expect(spool.statistics.lastError?.code == .diskFull)

        // A state: the reserve released and the oldest samples removed for it, committed at once, ahead of the
        // samples that were waiting (which follow it).
        #expect(FileManager.default.fileExists(atPath: dir.spoolPath + ".reserve"), "the reserve was held")
        var states: [UInt64] = []
        for n in 1...20 { states.append(try spool.appendDurably(state("adapter \(n)"))) }
        #expect(states.first == 3001, "the first state did not wait behind the samples")
        #expect(states == states.sorted() && Set(states).count == 20, "each state once, in order, under one seq each")
        let dropped = try #require(spool.statistics.drops[.sample]?.droppedOldest)
        #expect(dropped > 0, "the room came from the oldest samples, counted")
        #expect(spool.statistics.lastError == nil)
        let rows = try spool.everything()
        #expect(rows.filter { $0.reading.readingClass == .state }.map(\.text) == (1...20).map { "adapter \($0)" })
        #expect(rows.first?.seq == UInt64(dropped) + 1, "the oldest went first")
        #expect(rows.count == 3000 - Int(dropped) + 500 + 20, "the waiting samples are all in, after the first state")

        // Space returns: the reserve is held again.
        try FileManager.default.removeItem(atPath: filler)
        spool.append(big(0))
        #expect(try spool.commit() != nil)
        #expect(spool.statistics.lastError == nil)
        var st = stat()
        #expect(stat(dir.spoolPath + ".reserve", &st) == 0 && st.st_size == 1 << 20)
    }
}
