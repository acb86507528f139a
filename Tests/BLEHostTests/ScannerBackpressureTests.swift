import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEHost

/// The data path's two promises, through real H4 bytes: a source that can wait loses nothing to a slow consumer,
/// and a live radio loses only what its counters count — never a state event.
@Suite struct ScannerBackpressureTests {
    /// An LE Advertising Report (Core v5.4, Vol 4, Part E, §7.7.65.2), ADV_NONCONN_IND, empty data, RSSI -60, from
    /// a random address that carries `n`.
    static func report(_ n: Int) -> H4Packet {
        H4Packet(
            type: .event,
            payload: [
                0x3E, 0x0C, 0x02, 0x01, 0x03, 0x01,
                UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), 0x00, 0x00, 0x00, 0xC0, 0x00, 0xC4,
            ])
    }

    /// Disconnection Complete (§7.7.5), status 0, handle `n`, reason 0x13: a state event.
    static func disconnection(_ n: Int) -> H4Packet {
        H4Packet(type: .event, payload: [0x05, 0x04, 0x00, UInt8(n & 0xFF), UInt8(n >> 8 & 0x0F), 0x13])
    }

    /// The wire's first two address octets are the least significant: `n`.
    static func number(of r: ScanReport) -> Int { Int(r.address.rawValue & 0xFFFF) }

    @Test func aSourceThatCanWaitLosesNothingToASlowConsumer() async throws {
        let count = 5_000
        var file = Btsnoop.header()
        for i in 0..<count {
            file += Btsnoop.record(Self.report(i), direction: .received, unixMicroseconds: Int64(i))
        }
        // Tiny queues everywhere, so the replay must wait at every stage.
        let t = try CaptureReplayTransport(name: "corpus", bytes: file, clock: ManualClock(), queueCapacity: 4)
        var config = HCIController.Configuration()
        config.subscriberBuffer = 4
        let controller = HCIController(transport: t, clock: ManualClock(), configuration: config)
        let scanner = Scanner(controller: controller, mode: .observer, bufferSize: 4)
        let running = Task { try await controller.run() }
        let scanning = Task { try await scanner.run() }
        var got: [Int] = []
        for try await r in scanner.reports {
            got.append(Self.number(of: r))
            // A consumer that stalls now and then.
            if got.count % 500 == 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        try await scanning.value
        try await running.value
        #expect(got == Array(0..<count), "every report, in order")
        #expect(scanner.statistics.droppedReports == 0)
        #expect(controller.statistics.droppedEvents == 0)
        #expect(t.statistics.packetsReceived == count)
    }

    @Test func aLiveRadioLosesOnlyWhatItsCountersCountAndNoStateEvent() async throws {
        let reports = 2_000
        let t = ScriptedHCITransport(script: [], sendSupported: false, queueCapacity: 8)
        var config = HCIController.Configuration()
        config.subscriberBuffer = 8
        let controller = HCIController(transport: t, clock: ManualClock(), configuration: config)
        let scanner = Scanner(controller: controller, mode: .observer, bufferSize: 8)
        let states = controller.events()
        let running = Task { try await controller.run() }
        let scanning = Task { try await scanner.run() }
        // The radio keeps sending while nobody reads the reports; every tenth packet is a state event.
        var disconnections = 0
        for i in 0..<reports {
            t.inject(Self.report(i).h4Bytes)
            if i % 10 == 0 {
                t.inject(Self.disconnection(disconnections).h4Bytes)
                disconnections += 1
            }
        }
        t.end()
        var got = 0
        for try await _ in scanner.reports { got += 1 }
        try await scanning.value
        try await running.value
        let dropped = t.incoming.dropped + controller.statistics.droppedEvents + scanner.statistics.droppedReports
        #expect(dropped > 0, "the consumer did not read: the bounded queues overflowed")
        #expect(got + dropped == reports, "every report is delivered or counted: \(got) + \(dropped)")
        var heard = 0
        for await e in states.ignoringErrors { if case .event(.disconnectionComplete) = e { heard += 1 } }
        #expect(heard == disconnections, "state events are never dropped")
    }

    /// `--capture FILE` puts a recorder (with a queue of its own) between the radio and the host: what that queue
    /// drops is counted with the rest.
    @Test func aRecordingTransportCountsWhatItsOwnQueueDrops() async throws {
        let path = NSTemporaryDirectory() + "blegw-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let radio = ScriptedHCITransport(script: [], sendSupported: false, queueCapacity: 8)
        let t = CapturingTransport(wrapping: radio, writer: try BtsnoopFileWriter(path: path), clock: ManualClock())
        // Eight the recorder forwards and holds (its queue is then full), then eight it must drop: the radio's queue
        // never overflows, so every loss is the recorder's.
        for i in 0..<8 { radio.inject(Self.report(i).h4Bytes) }
        #expect(await eventually { radio.incoming.depth == 0 && t.incoming.depth == 8 })
        for i in 8..<16 { radio.inject(Self.report(i).h4Bytes) }
        #expect(await eventually { radio.incoming.depth == 0 })
        radio.end()
        var got = 0
        for try await _ in t.incoming { got += 1 }
        #expect(got == 8)
        #expect(radio.incoming.dropped == 0)
        #expect(got + t.statistics.droppedReports == 16, "\(got) delivered + \(t.statistics.droppedReports) counted")
    }

    @Test func aConsumerThatLeavesReleasesAProducerThatWaits() async throws {
        let q = StageQueue<Int>(capacity: 2, whenFull: .wait)
        let producer = Task { () -> [StageOutcome] in
            var outcomes: [StageOutcome] = []
            for i in 0..<10 { outcomes.append(await q.send(i)) }
            return outcomes
        }
        var it = q.makeAsyncIterator()
        #expect(try await it.next() == 0)
        q.cancel()
        let outcomes = await producer.value
        #expect(outcomes.contains(.terminated), "the producer was let go, not left waiting")
        #expect(!outcomes.contains(.dropped))
    }

    @Test func essentialElementsPassAFullQueue() async throws {
        let q = StageQueue<Int>(capacity: 1, whenFull: .drop)
        #expect(q.offer(1) == .enqueued)
        #expect(q.offer(2) == .dropped)
        #expect(q.offer(3, essential: true) == .enqueued)
        q.finish()
        var got: [Int] = []
        for try await e in q { got.append(e) }
        #expect(got == [1, 3])
        #expect(q.dropped == 1)
    }
}
