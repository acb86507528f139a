import Foundation
import Testing

@testable import BLESpool

@Suite("a corrupt spool file is moved aside, salvaged, and replaced")
struct SpoolCorruptionTests {
    @Test func aFileThatIsNotADatabaseIsMovedAsideUntouchedAndAFreshSpoolStarts() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let garbage = Data(repeating: 0x5A, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: dir.spoolPath))
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        let report = spool.statistics.openReport
        let cause = try #require(report.corruption)
        #expect(cause.code == .corrupt)
        #expect(cause.description.contains(dir.spoolPath), "the error names the file: \(cause)")
        let aside = try #require(report.movedAsideTo)
        #expect(aside.hasPrefix(dir.spoolPath + ".corrupt-"))
        #expect(FileManager.default.contents(atPath: aside) == garbage, "the unreadable file is kept as it was")
        #expect(report.salvagedReadings == 0)
        #expect(report.description.contains("moved aside to \(aside)"), "\(report)")
        spool.append(sample(1))
        #expect(try spool.commit() == 1...1)
    }

    @Test func readableRowsOfADamagedFileAreSalvagedWithTheirSeqAndTheCounterContinues() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath)
        let count = 2000
        do {
            let spool = try Spool(configuration: config)
            for n in 1...count { spool.append(sample(n)) }
            try spool.commit()
        }  // closing checkpoints the WAL into the main file
        #expect(!FileManager.default.fileExists(atPath: dir.spoolPath + "-wal"))
        try Self.tearMiddlePage(of: dir.spoolPath)

        let spool = try Spool(configuration: config)
        let report = spool.statistics.openReport
        #expect(report.corruption?.code == .corrupt)
        #expect(report.movedAsideTo != nil)
        let rows = try spool.everything()
        #expect(report.salvagedReadings == rows.count)
        #expect(rows.count > 0 && rows.count < count, "salvaged \(rows.count) of \(count)")
        #expect(rows.first?.seq == 1, "read forwards from the start")
        #expect(rows.last?.seq == UInt64(count), "and backwards from the end")
        #expect(rows.allSatisfy { $0.text == "rssi \($0.seq)" }, "every salvaged row is intact")
        #expect(rows.map(\.seq) == rows.map(\.seq).sorted())
        spool.append(sample(0))
        let next = try #require(try spool.commit())
        #expect(next.lowerBound > UInt64(count), "no seq is reused after a salvage")
    }

    @Test func deadLettersOfADamagedFileAreSalvagedWithTheirSeqReasonAndTime() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let config = SpoolConfiguration(path: dir.spoolPath)
        let count = 2000
        let tooLarge = DeadLetterReason(code: 0x95, name: "Packet too large")
        do {
            let spool = try Spool(configuration: config)
            for n in 1...count { spool.append(sample(n)) }
            try spool.commit()
            spool.deadLetter(1, reason: tooLarge, at: 1_700_000_001)
            spool.deadLetter(UInt64(count), reason: tooLarge, at: 1_700_000_002)
            try spool.commit()
        }
        try Self.tearMiddlePage(of: dir.spoolPath)

        let spool = try Spool(configuration: config)
        let report = spool.statistics.openReport
        #expect(report.corruption?.code == .corrupt)
        #expect(report.salvagedDeadLetters == 2, "\(report)")
        let letters = try spool.deadLetters()
        #expect(letters.map(\.spooled.seq) == [1, UInt64(count)])
        #expect(letters.allSatisfy { $0.reason == tooLarge && $0.spooled.text == "rssi \($0.spooled.seq)" })
        #expect(letters.map(\.at) == [1_700_000_001, 1_700_000_002])
        #expect(
            try spool.everything().allSatisfy { $0.seq != 1 && $0.seq != UInt64(count) },
            "a dead letter stays out of the queue")
        // An operator can still put them back.
        #expect(try spool.requeueDeadLetters() == 2)
        #expect(try spool.everything().first?.seq == 1)
    }

    /// Overwrites the page in the middle of the file with garbage: an SD card's torn write, inside the readings.
    static func tearMiddlePage(of path: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let pages = try handle.seekToEnd() / 4096
        try handle.seek(toOffset: (pages / 2) * 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
    }
}
