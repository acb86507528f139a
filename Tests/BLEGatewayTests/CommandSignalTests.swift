import BLETestSupport
import Foundation
import Testing

/// The commands that write lines — `hci-dump` and `watch --record` here, `scan` in CaptureReplayCommandTests — keep
/// every line they counted when SIGINT or SIGTERM stops them, and exit 0 with their count on stderr (stdout to a file
/// is block-buffered by default; a signal must not lose what was written).
@Suite(.serialized) struct CommandSignalTests {
    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Waits (bounded) until `path` holds at least `count` lines; false when it never does.
    static func lines(in path: String, reach count: Int, within limit: Duration = .seconds(30)) async -> Bool {
        (try? await waitUntil("\(count) lines in \(path)", limit: limit, every: .milliseconds(50)) {
            CaptureReplayCommandTests.lines(path).count >= count
        }) != nil
    }

    @Test(
        .enabled(
            if: TestDependency.runs(!CaptureReplayCommandTests.captureFiles.isEmpty),
            "the real captures are not at ../shared/captures"),
        arguments: [SIGINT, SIGTERM])
    func hciDumpStoppedBySignalKeepsEveryPacketItCounted(signal: Int32) async throws {
        try TestDependency.require(
            !CaptureReplayCommandTests.captureFiles.isEmpty, "the real captures at ../shared/captures")
        let dir = try CaptureReplayCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let capture =
            CaptureReplayCommandTests.captureFiles.first { $0.hasSuffix("light.btsnoop") }
            ?? CaptureReplayCommandTests.captureFiles[0]
        // Paced as recorded, the capture lasts minutes: the signal comes mid-stream.
        let p = try CaptureReplayCommandTests.start(
            ["hci-dump", "--device", "file:\(capture)", "--realtime", "--duration", "600"], in: dir)
        #expect(await Self.lines(in: "\(dir)/out", reach: 20), "hci-dump printed nothing: \(Self.text("\(dir)/err"))")
        kill(p.processIdentifier, signal)
        p.waitUntilExit()
        let err = Self.text("\(dir)/err")
        let printed = CaptureReplayCommandTests.lines("\(dir)/out")
        #expect(p.terminationStatus == 0, "\(err)")
        #expect(err.contains("hci-dump: \(printed.count) packets, stopped by signal"), "\(err)")
        // Whole lines only: each an H4 packet in hex.
        #expect(printed.allSatisfy { $0.count >= 4 && $0.count % 2 == 0 && $0.allSatisfy(\.isHexDigit) })
    }

    @Test(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "mosquitto is not installed"),
        arguments: [SIGINT, SIGTERM])
    func watchRecordStoppedBySignalKeepsEveryMessageItCounted(signal: Int32) async throws {
        let dir = try CaptureReplayCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try Mosquitto(directory: URL(fileURLWithPath: dir), persistence: true)
        try broker.start()
        defer { broker.terminate() }
        // Retained before the watch starts, so the watch receives all of them on subscribing.
        let count = 40
        for i in 0..<count {
            let pub = Process()
            pub.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
            pub.arguments = [
                "-p", "\(broker.port)", "-q", "1", "-r", "-t", "sig/gw-\(i)/status",
                "-m", #"{"run":"r","seq":\#(i),"ts":1,"clock_synced":true,"online":true}"#,
            ]
            try pub.run()
            pub.waitUntilExit()
            #expect(pub.terminationStatus == 0)
        }
        let record = "\(dir)/record.jsonl"
        let p = try CaptureReplayCommandTests.start(
            ["watch", "--broker", broker.url, "--prefix", "sig", "--plain", "--record", record], in: dir)
        #expect(await Self.lines(in: record, reach: count), "watch recorded too little: \(Self.text("\(dir)/err"))")
        kill(p.processIdentifier, signal)
        p.waitUntilExit()
        let err = Self.text("\(dir)/err")
        let recorded = CaptureReplayCommandTests.lines(record)
        #expect(p.terminationStatus == 0, "\(err)")
        #expect(recorded.count == count)
        #expect(err.contains("watch: \(recorded.count) messages recorded in \(record), stopped by signal"), "\(err)")
        for line in recorded {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["topic"] is String && object?["retained"] as? Bool == true, "\(line)")
        }
    }
}
