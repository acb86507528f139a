import BLETestSupport
import Foundation
import Testing

@testable import BLETransport

@Suite struct CaptureReplayTests {
    let reset = H4Packet(type: .command, payload: [0x03, 0x0C, 0x00])
    let resetComplete = H4Packet(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    // An LE Advertising Report (Core v5.4, Vol 4, Part E, §7.7.65.2) with empty data, RSSI -60.
    let report = H4Packet(
        type: .event,
        payload: [
            0x3E, 0x0C, 0x02, 0x01, 0x03, 0x00,
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x00, 0xC4,
        ])

    func collect(_ t: some HCITransport) async throws -> [H4Packet] {
        var out: [H4Packet] = []
        for try await p in t.incoming { out.append(p) }
        return out
    }

    @Test func btsnoopReplayYieldsOnlyControllerToHostPackets() async throws {
        let file =
            Btsnoop.header() + Btsnoop.record(reset, direction: .sent, unixMicroseconds: 0)
            + Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 10)
            + Btsnoop.record(report, direction: .received, unixMicroseconds: 20)
        let t = try CaptureReplayTransport(name: "test", bytes: file, clock: ManualClock())
        try t.send(reset)  // accepted and discarded
        #expect(try await collect(t) == [resetComplete, report])
    }

    @Test func rawH4DumpIsDetectedWithoutMagic() async throws {
        let file = reset.h4Bytes + resetComplete.h4Bytes + report.h4Bytes
        let t = try CaptureReplayTransport(name: "test", bytes: file, clock: ManualClock())
        #expect(try await collect(t) == [resetComplete, report])
        #expect(t.statistics.droppedRecords == 0)
    }

    @Test func truncatedFinalRecordIsCountedAndTheRestReplayed() async throws {
        let file =
            Btsnoop.header() + Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 0)
            + Btsnoop.record(report, direction: .received, unixMicroseconds: 1).dropLast(4)
        let t = try CaptureReplayTransport(name: "test", bytes: file, clock: ManualClock())
        #expect(try await collect(t) == [resetComplete])
        #expect(t.statistics.droppedRecords == 1)
    }

    @Test func badHeaderIsAClearBadCaptureError() {
        let file = Array("btsnoop\0".utf8) + [0, 0, 0, 9, 0, 0, 3, 0xEA]
        #expect { try CaptureReplayTransport(name: "test", bytes: file, clock: ManualClock()) } throws: {
            ($0 as? TransportError)?.kind == .badCapture
        }
    }

    @Test func missingFileIsReportedByPath() {
        #expect { try CaptureReplayTransport(path: "/nonexistent/x.btsnoop", clock: ManualClock()) } throws: {
            ($0 as? TransportError)?.message.contains("/nonexistent/x.btsnoop") == true
        }
    }

    @Test func recordedPacingWaitsForTheClock() async throws {
        let file =
            Btsnoop.header() + Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 0)
            + Btsnoop.record(report, direction: .received, unixMicroseconds: 3_000_000)
        let clock = ManualClock()
        let t = try CaptureReplayTransport(name: "test", bytes: file, clock: clock, pacing: .recorded)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next() == resetComplete)
        await clock.untilSleeping()
        clock.advance(by: .seconds(2))
        #expect(clock.sleeperCount == 1)  // the second packet is 3 s after the first
        clock.advance(by: .seconds(1))
        #expect(try await it.next() == report)
        #expect(try await it.next() == nil)
    }

    @Test func closeEndsTheReplay() async throws {
        let file =
            Btsnoop.header() + Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 0)
            + Btsnoop.record(report, direction: .received, unixMicroseconds: 60_000_000)
        let clock = ManualClock()
        let t = try CaptureReplayTransport(name: "test", bytes: file, clock: clock, pacing: .recorded)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next() == resetComplete)
        t.close()
        t.close()
        #expect(try await it.next() == nil)
    }
}

@Suite struct OpenTransportTests {
    @Test func factoryReplaysAFileAndWrapsItForCapture() async throws {
        let dir = NSTemporaryDirectory() + "blegw-open-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let event = H4Packet(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        let source = Btsnoop.header() + Btsnoop.record(event, direction: .received, unixMicroseconds: 0)
        #expect(FileManager.default.createFile(atPath: dir + "/in.btsnoop", contents: Data(source)))
        var options = TransportOptions()
        options.capturePath = dir + "/out.btsnoop"
        let t = try openTransport(
            try DeviceSpec(parsing: "file:\(dir)/in.btsnoop"), clock: ManualClock(),
            options: options)
        #expect(t is CapturingTransport)
        var got: [H4Packet] = []
        for try await p in t.incoming { got.append(p) }
        #expect(got == [event])
        #expect((t as? any TransportStatisticsProviding)?.statistics.packetsReceived == 1)
        (t as? CapturingTransport)?.writer.close()
        var reader = try BtsnoopReader(
            [UInt8](try #require(FileManager.default.contents(atPath: dir + "/out.btsnoop"))))
        let copied = reader.next()
        #expect(copied?.packet == event && copied?.direction == .received)
    }
}
