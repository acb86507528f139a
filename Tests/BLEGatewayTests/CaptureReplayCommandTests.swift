import BLETestSupport
import Foundation
import Testing

/// `blegateway scan --device file:…` on the real captures in ../shared/captures/ (recorded by other people on
/// Android phones), checked against tshark's independent dissection, and what the command does with its output on
/// the way out.
@Suite(.serialized) struct CaptureReplayCommandTests {
    static let captures = BuiltProducts.repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/captures").path

    static var captureFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: captures)) ?? []).filter { $0.hasSuffix(".btsnoop") }
            .sorted().map { "\(captures)/\($0)" }
    }

    /// Runs `blegateway ARGS` with stdout and stderr in files of `dir`; returns the process, not waited for.
    static func start(_ args: [String], in dir: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: BuiltProducts.blegateway)
        p.arguments = args
        FileManager.default.createFile(atPath: "\(dir)/out", contents: nil)
        FileManager.default.createFile(atPath: "\(dir)/err", contents: nil)
        p.standardOutput = FileHandle(forWritingAtPath: "\(dir)/out")
        p.standardError = FileHandle(forWritingAtPath: "\(dir)/err")
        try p.run()
        return p
    }

    static func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "blegw-replay-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test(.enabled(if: TestDependency.runs(!captureFiles.isEmpty), "the real captures are not at ../shared/captures"))
    func everyReportOfTheRealCapturesEqualsTsharksDissectionFieldByField() throws {
        try TestDependency.require(!Self.captureFiles.isEmpty, "the real captures at ../shared/captures")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments =
            [
                BuiltProducts.repositoryRoot.appendingPathComponent("Tests/tools/compare_tshark.py").path,
                BuiltProducts.blegateway,
            ] + Self.captureFiles
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let report = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(report.suffix(3000))")
        #expect(report.contains("\(Self.captureFiles.count) passed, 0 failed"), "\(report.suffix(3000))")
    }

    @Test(.enabled(if: TestDependency.runs(!captureFiles.isEmpty), "the real captures are not at ../shared/captures"))
    func aReplayGivesTheSameLinesOnEveryRun() throws {
        try TestDependency.require(!Self.captureFiles.isEmpty, "the real captures at ../shared/captures")
        let capture = Self.captureFiles.first { $0.hasSuffix("ec521.btsnoop") } ?? Self.captureFiles[0]
        func run() throws -> [String] {
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let p = try Self.start(["scan", "--device", "file:\(capture)", "--json"], in: dir)
            p.waitUntilExit()
            // `ts` is the replaying clock's; everything after it is the report's.
            return Self.lines("\(dir)/out").map { line in
                guard let comma = line.firstIndex(of: ",") else { return line }
                return String(line[comma...])
            }
        }
        let first = try run()
        let second = try run()
        #expect(first.count > 1000)
        #expect(first == second)
    }

    @Test(.enabled(if: TestDependency.runs(!captureFiles.isEmpty), "the real captures are not at ../shared/captures"))
    func aTruncatedCaptureDeliversTheReportsBeforeTheDamageAndSaysSo() throws {
        try TestDependency.require(!Self.captureFiles.isEmpty, "the real captures at ../shared/captures")
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let whole = try #require(
            FileManager.default.contents(
                atPath: Self.captureFiles.first { $0.hasSuffix("ec521.btsnoop") } ?? Self.captureFiles[0]))
        // Cut in the middle of a record.
        try whole.prefix(whole.count / 2 + 7).write(to: URL(fileURLWithPath: "\(dir)/cut.btsnoop"))
        let p = try Self.start(["scan", "--device", "file:\(dir)/cut.btsnoop", "--json"], in: dir)
        p.waitUntilExit()
        let err = (try? String(contentsOfFile: "\(dir)/err", encoding: .utf8)) ?? ""
        let printed = Self.lines("\(dir)/out").count
        #expect(p.terminationStatus == 0)
        #expect(printed > 0)
        #expect(err.contains("scan: \(printed) reports, 0 dropped"), "\(err)")
        #expect(err.contains("ends in the middle of a record"), "\(err)")
    }

    /// A realtime replay stands in for a radio: the scan is stopped while it prints, and every report it counted
    /// must be in the file (stdout to a file is block-buffered; the signal must not lose the buffer).
    @Test(
        .enabled(if: TestDependency.runs(!captureFiles.isEmpty), "the real captures are not at ../shared/captures"),
        arguments: [SIGINT, SIGTERM])
    func scanStoppedBySignalKeepsEveryLineItCounted(signal: Int32) async throws {
        try TestDependency.require(!Self.captureFiles.isEmpty, "the real captures at ../shared/captures")
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let capture = Self.captureFiles.first { $0.hasSuffix("light.btsnoop") } ?? Self.captureFiles[0]
        let p = try Self.start(["scan", "--device", "file:\(capture)", "--json", "--realtime"], in: dir)
        // Mid-stream: a realtime replay of this capture lasts minutes.
        try await Task.sleep(for: .seconds(3))
        kill(p.processIdentifier, signal)
        p.waitUntilExit()
        let err = (try? String(contentsOfFile: "\(dir)/err", encoding: .utf8)) ?? ""
        let printed = Self.lines("\(dir)/out").count
        #expect(p.terminationStatus == 0, "\(err)")
        #expect(printed > 0, "lines reached the file before the signal: \(err)")
        #expect(err.contains("scan: \(printed) reports, 0 dropped"), "every counted report is in the file: \(err)")
    }
}
