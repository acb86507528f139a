import BLETransport
import Foundation
import Testing

@testable import BLESpool

/// Corruption found while the spool runs (a card returning other bytes than it was given): the file is set aside,
/// what can be read from it goes into a fresh file with its seq, the rest is counted as lost, and the spool carries
/// on; it is never retried for ever.
struct SpoolQuarantineTests {
    /// A spool of 4,000 readings of 1 KiB (about 1,000 pages, far more than SQLite's 2 MiB page cache once the reads
    /// below evict them), checkpointed into the main file, whose pages `range` are then overwritten with garbage
    /// behind SQLite's back.
    static func corruptedWhileOpen(_ dir: TemporaryDirectory) throws -> (Spool, [UInt64: String]) {
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, durability: .normal))
        var bodies: [UInt64: String] = [:]
        for n in 1...4000 {
            let body = "\(n) " + String(repeating: "x", count: 1024)
            spool.append(
                Reading(
                    .sample, topic: "gw/beacon/\(n % 7)", body: Array(body.utf8), qos: 0, ts: 1.7e9,
                    clockSynchronized: true, run: "run-1"))
            if n % 500 == 0, let range = try spool.commit() { for seq in range { bodies[seq] = "" } }
        }
        for r in try spool.everything() { bodies[r.seq] = r.text }
        try spool.databaseLock.withLock { try spool.db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        // The newest pages were just read and stay cached; the oldest are read from the file again.
        _ = try spool.pending(after: 3000, limit: 1000)
        let handle = try #require(FileHandle(forUpdatingAtPath: dir.spoolPath))
        try handle.seek(toOffset: 16 * 4096)
        var garbage = SystemRandomNumberGenerator()
        try handle.write(contentsOf: (0..<(100 * 4096)).map { _ in UInt8.random(in: 0...255, using: &garbage) })
        try handle.synchronize()
        try handle.close()
        return (spool, bodies)
    }

    @Test func corruptionFoundByTheReaderSetsTheFileAsideAndTheSpoolCarriesOnWithWhatCouldBeRead() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (spool, bodies) = try Self.corruptedWhileOpen(dir)
        let told = Locked<[SpoolOpenReport]>([])
        spool.observeQuarantines { r in told.withLock { $0.append(r) } }

        // The publisher reads from the oldest: the corrupt pages are found there.
        let read = try spool.pending(after: 0, limit: 100)
        let s = spool.statistics
        #expect(s.quarantines == 1)
        let report = try #require(s.lastQuarantine)
        #expect(report.corruption?.code == .corrupt, "\(report)")
        #expect(told.withLock { $0 } == [report])
        let aside = try #require(report.movedAsideTo)
        #expect(FileManager.default.fileExists(atPath: aside), "kept for a post-mortem")
        #expect(!FileManager.default.fileExists(atPath: SpoolSalvage.markerPath(dir.spoolPath)), "salvage finished")
        // What the fresh file holds is what was there, seq for seq; what it lacks is counted, nothing else lost.
        let kept = try spool.everything()
        #expect(kept.count == report.salvagedReadings && report.salvagedReadings > 0, "\(report)")
        #expect(report.salvagedReadings + report.lostReadings == 4000, "\(report)")
        #expect(kept.allSatisfy { bodies[$0.seq] == $0.text })
        #expect(read.map(\.seq) == Array(kept.prefix(100)).map(\.seq))
        #expect(s.depth == kept.count)
        // Seqs carry on above every one issued.
        spool.append(sample(1))
        #expect(try spool.commit() == 4001...4001)
        #expect(report.description.contains("unreadable, lost"), "\(report)")
    }

    @Test func corruptionFoundByACommitSetsTheFileAsideAndTheBatchIsCommittedInTheFreshFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let kept: [SpooledReading]
        do {
            let (spool, _) = try Self.corruptedWhileOpen(dir)
            // Acknowledging the oldest deletes them with the next commit: the deletion meets the corrupt pages.
            spool.acknowledge(1...200)
            spool.append(state("online"))
            let committed = try spool.commit()
            #expect(committed == 4001...4001)
            let s = spool.statistics
            #expect(s.quarantines == 1 && s.lastError == nil, "\(s)")
            kept = try spool.everything()
            #expect(kept.last?.text == "online")
            #expect(!kept.contains { $0.seq <= 200 }, "acknowledged readings salvaged are still deleted")
        }

        // The next start opens the fresh file as it is: nothing to resume, the same readings.
        let reopened = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        #expect(reopened.statistics.openReport.corruption == nil)
        #expect(reopened.statistics.openReport.resumedSalvageOf == nil)
        #expect(try reopened.everything().map(\.seq) == kept.map(\.seq))
    }

    /// An I/O error can be a hiccup of the card or the bus: the file is set aside only after three in a row, and
    /// then everything it held is still readable, so nothing is lost.
    @Test func threeIOErrorsInARowQuarantineTheFileAndOneOrTwoDoNot() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        for n in 1...50 { spool.append(sample(n)) }
        try spool.commit()
        let ioError = SpoolError(
            .sqlite, path: dir.spoolPath, context: "commit",
            sqlite: SQLiteResultCode(rawValue: 778))  // SQLITE_IOERR_WRITE
        let answers = spool.databaseLock.withLock { (1...3).map { _ in spool.quarantineIfNeeded(ioError) } }
        #expect(answers == [false, false, true])
        spool.append(sample(51))
        #expect(try spool.commit() == 51...51)
        let report = try #require(spool.statistics.lastQuarantine)
        #expect(report.salvagedReadings == 50 && report.lostReadings == 0, "\(report)")
        #expect(try spool.everything().map(\.text) == (1...51).map { "rssi \($0)" })
    }

    /// A successful commit between I/O errors starts the count again.
    @Test func ioErrorsSeparatedByASuccessfulCommitDoNotQuarantine() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        let ioError = SpoolError(
            .sqlite, path: dir.spoolPath, context: "commit",
            sqlite: SQLiteResultCode(rawValue: 778))
        for n in 1...3 {
            #expect(
                !spool.databaseLock.withLock { spool.quarantineIfNeeded(ioError) || spool.quarantineIfNeeded(ioError) })
            spool.append(sample(n))
            try spool.commit()
        }
        #expect(spool.statistics.quarantines == 0)
    }
}
