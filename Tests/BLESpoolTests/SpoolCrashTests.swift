import Foundation
import Testing

@testable import BLESpool

/// The crash test runs a writer in a CHILD process (this same test binary, re-executed with a filter that selects
/// only `crashChildWriterAppendsUntilKilled`) and kills it with SIGKILL mid-stream: a real crash, with no chance to
/// flush or close. Forking this multi-threaded process and running Swift in the child would not be safe.
private let childDatabase = ProcessInfo.processInfo.environment["BLESPOOL_CRASH_CHILD"]
private let childLog = ProcessInfo.processInfo.environment["BLESPOOL_CRASH_LOG"] ?? "/dev/null"
private let childRound = Int(ProcessInfo.processInfo.environment["BLESPOOL_CRASH_ROUND"] ?? "0") ?? 0
private let batchSize = 500

@Suite("crash safety: SIGKILL mid-stream")
struct SpoolCrashTests {
    /// The child half: appends batches of samples, logging each batch BEFORE its commit ("B") and each committed
    /// range AFTER its commit returned ("C"), plus one state event per batch through `appendDurably` ("S"). The log
    /// is written with write(2), so it survives the SIGKILL in the page cache.
    @Test(.enabled(if: childDatabase != nil, "the writer half of the crash test, started only by that test"))
    func crashChildWriterAppendsUntilKilled() throws {
        let spool = try Spool(configuration: SpoolConfiguration(path: try #require(childDatabase)))
        let log = open(childLog, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        defer { close(log) }
        func note(_ line: String) {
            _ = line.utf8CString.withUnsafeBufferPointer { write(log, $0.baseAddress, $0.count - 1) }
        }
        let started = Date()
        var index = 0
        var batch = 0
        while Date().timeIntervalSince(started) < 120 {
            for _ in 0..<batchSize {
                spool.append(sample(index, topic: "gw/crash/\(childRound)", run: "round-\(childRound)"))
                index += 1
            }
            note("B \(batch)\n")
            if let range = try spool.commit() { note("C \(range.upperBound)\n") }
            let seq = try spool.appendDurably(state("after batch \(batch)", run: "round-\(childRound)"))
            note("S \(seq)\n")
            batch += 1
        }
    }

    @Test(.enabled(if: childDatabase == nil, "this is the crash child itself"))
    func everyCommittedSeqAndStateSurvivesSigkillAndAtMostTheUncommittedBatchIsLost() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var previousMax: UInt64 = 0
        for round in 0..<3 {
            let logPath = dir.path + "/round-\(round).log"
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "crashChildWriterAppendsUntilKilled"]
            var environment = ProcessInfo.processInfo.environment
            environment["BLESPOOL_CRASH_CHILD"] = dir.spoolPath
            environment["BLESPOOL_CRASH_LOG"] = logPath
            environment["BLESPOOL_CRASH_ROUND"] = "\(round)"
            child.environment = environment
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()
            // Let it commit a while (a different number of commits each round), then kill it mid-stream.
            let wanted = 10 + 7 * round
            let deadline = Date().addingTimeInterval(60)
            while commitLines(logPath) < wanted, child.isRunning, Date() < deadline { usleep(5_000) }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            #expect(child.terminationReason == .uncaughtSignal, "the child was killed, it did not stop by itself")

            let lines = (try? String(contentsOfFile: logPath, encoding: .utf8))?.split(separator: "\n") ?? []
            let committed = lines.filter { $0.hasPrefix("C ") }.compactMap { UInt64($0.dropFirst(2)) }
            let states = lines.filter { $0.hasPrefix("S ") }.compactMap { UInt64($0.dropFirst(2)) }
            let batchesStarted = lines.filter { $0.hasPrefix("B ") }.count
            try #require(committed.count >= wanted)

            let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath))
            #expect(spool.statistics.openReport.corruption == nil)
            let rows = try spool.everything().filter { $0.reading.run == "round-\(round)" }
            let seqs = Set(rows.map(\.seq))
            // 1. Every seq the child saw committed is there, and every state it was told was durable.
            let lastCommitted = try #require(committed.max())
            #expect(committed.allSatisfy(seqs.contains))
            #expect(states.allSatisfy { seqs.contains($0) })
            #expect(
                rows.filter { $0.seq <= lastCommitted }.map(\.seq) == Array((previousMax + 1)...lastCommitted),
                "no hole below the last committed seq")
            // 2. What survived of the samples is a prefix of what was appended, in order...
            let samples = rows.filter { $0.reading.readingClass == .sample }
            #expect(samples.map(\.text) == (0..<samples.count).map { "rssi \($0)" })
            // ...missing at most the batch whose commit was under way (and the one being appended).
            #expect(
                samples.count >= batchSize * (batchesStarted - 1),
                "\(samples.count) samples kept of \(batchesStarted) batches started")
            // 3. seq never goes back across crashes.
            #expect(rows.first.map { $0.seq > previousMax } ?? true)
            previousMax = spool.statistics.lastSeq
        }
    }
}

private func commitLines(_ path: String) -> Int {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
    return text.split(separator: "\n").filter { $0.hasPrefix("C ") }.count
}
