import Foundation
import Testing

@testable import BLESpool

/// A salvage cut short by a crash is finished at the next start, and the files set aside stay within their bound.
struct SpoolSalvageResumeTests {
    /// A spool of `count` samples, closed; then set aside as `Spool.init` does up to the moment of a crash: the marker
    /// written, the file renamed, nothing committed anywhere yet.
    static func interruptedSalvage(_ dir: TemporaryDirectory, count: Int) throws -> String {
        do {
            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            for n in 1...count { spool.append(sample(n)) }
            try spool.commit()
        }
        return try SpoolSalvage.moveAside(dir.spoolPath)
    }

    @Test func aSalvageCutShortBeforeItsCommitIsFinishedAtTheNextStart() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let aside = try Self.interruptedSalvage(dir, count: 50)
        #expect(!FileManager.default.fileExists(atPath: dir.spoolPath))

        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        let report = spool.statistics.openReport
        #expect(report.resumedSalvageOf == aside, "\(report)")
        #expect(report.description.contains("resumed the salvage of \(aside)"))
        #expect(try spool.everything().map(\.seq) == Array(1...50))
        #expect(try spool.everything().allSatisfy { $0.text == "rssi \($0.seq)" })
        #expect(!FileManager.default.fileExists(atPath: SpoolSalvage.markerPath(dir.spoolPath)), "the marker is gone")
        spool.append(sample(0))
        #expect(try spool.commit()?.lowerBound ?? 0 > 50, "no seq is reused")
    }

    @Test func aSalvageCutShortAfterItsCommitAddsNothingTwice() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let aside = try Self.interruptedSalvage(dir, count: 20)
        // The first start committed the salvaged rows, and the crash came before the marker was removed.
        do { _ = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath)) }
        try DurableWrite.replace(SpoolSalvage.markerPath(dir.spoolPath), with: Array(aside.utf8))

        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
        #expect(spool.statistics.openReport.resumedSalvageOf == aside)
        #expect(try spool.everything().map(\.seq) == Array(1...20))
        #expect(spool.statistics.depth == 20)
    }

    @Test func filesSetAsideAreKeptWithinTheirBoundOldestRemovedFirst() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var removed = 0
        var kept: [String] = []
        for n in 1...5 {
            try Data(repeating: UInt8(n), count: 4096).write(to: URL(fileURLWithPath: dir.spoolPath))
            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            removed += spool.statistics.openReport.setAsideRemoved
            kept.append(try #require(spool.statistics.openReport.movedAsideTo))
            #expect(spool.statistics.openReport.setAsideFiles == min(n, 3))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".corrupt-") }
        #expect(left.count == 3, "\(left)")
        #expect(removed == 2)
        // The newest three are the ones kept.
        #expect(Set(left.map { dir.path + "/" + $0 }) == Set(kept.suffix(3)))
        #expect(FileManager.default.contents(atPath: kept[4]) == Data(repeating: 5, count: 4096))
    }
}
