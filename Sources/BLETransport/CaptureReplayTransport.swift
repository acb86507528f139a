import Foundation

/// Replays a capture (`file:PATH`) as if it were a controller: the controller→host packets of a
/// btsnoop file (datalink 1002 or 2001) or of a raw H4 byte dump, detected by the btsnoop magic.
/// `send` accepts and discards, so a host stack can run its bring-up against a capture.
public final class CaptureReplayTransport: HCITransport, @unchecked Sendable {
    public enum Pacing: Sendable, Hashable {
        /// Every packet at once.
        case asFastAsPossible
        /// Packets spaced as recorded, on the injected clock (raw H4 dumps carry no times: as fast as possible).
        case recorded
    }

    /// A packet to replay and when, relative to the first one.
    struct Item: Sendable {
        var packet: H4Packet
        var offset: Duration
    }

    public let name: String
    public let incoming: AsyncThrowingStream<H4Packet, any Error>
    public let statistics: TransportStatistics
    private let continuation: AsyncThrowingStream<H4Packet, any Error>.Continuation
    private let lock = NSLock()
    private var replay: Task<Void, Never>?

    public convenience init(path: String, clock: any BLEClock, pacing: Pacing = .asFastAsPossible) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw TransportError(exists ? .io : .noSuchAdapter, "cannot read capture \(path)"
                                 + (exists ? "" : ": no such file"))
        }
        try self.init(name: "file:\(path)", bytes: [UInt8](data), clock: clock, pacing: pacing)
    }

    /// Replays `bytes` (a whole capture file).
    public init(name: String, bytes: [UInt8], clock: any BLEClock, pacing: Pacing = .asFastAsPossible) throws {
        self.name = name
        let (items, stats) = try Self.parse(bytes)
        self.statistics = stats
        (incoming, continuation) = AsyncThrowingStream.makeStream(of: H4Packet.self, bufferingPolicy: .unbounded)
        let continuation = self.continuation
        let task = Task {
            let start = clock.now()
            for item in items {
                if pacing == .recorded {
                    do { try await clock.sleep(until: start + item.offset) } catch { break }
                }
                continuation.yield(item.packet)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        replay = task
    }

    /// The packets to replay, with counters: btsnoop's truncated final record, raw H4 garbage.
    static func parse(_ bytes: [UInt8]) throws -> ([Item], TransportStatistics) {
        var stats = TransportStatistics()
        var items: [Item] = []
        if Btsnoop.hasMagic(bytes) || (bytes.count < 8 && Btsnoop.magic.starts(with: bytes) && !bytes.isEmpty) {
            var reader = try BtsnoopReader(bytes)
            var first: Int64?
            // A monitor capture may hold several adapters (a scanner and an advertiser, say): replay the first one
            // that reports an advertisement, or else the first one that speaks.
            let index = reader.datalink == .linuxMonitor ? try Self.scanningAdapter(in: bytes) : nil
            while let r = reader.next() {
                guard r.direction == .received else { continue }
                if reader.datalink == .linuxMonitor {
                    guard r.controllerIndex == index else { continue }
                }
                let base = first ?? r.unixMicroseconds
                first = base
                items.append(Item(packet: r.packet, offset: .microseconds(max(0, r.unixMicroseconds - base))))
            }
            stats.droppedRecords = reader.truncatedRecords
            stats.garbageBytes = 0
        } else {
            var deframer = H4Deframer()
            deframer.append(bytes)
            while let p = deframer.next() {
                if p.type != .command { items.append(Item(packet: p, offset: .zero)) }
            }
            if items.isEmpty && !bytes.isEmpty {
                throw TransportError(.badCapture, "neither a btsnoop file nor an H4 dump: no HCI packet in \(bytes.count) bytes")
            }
            // Whatever is left is a packet cut short at the end of the dump.
            stats.droppedRecords = deframer.pendingBytes > 0 ? 1 : 0
            stats.garbageBytes = deframer.garbageBytes
            stats.oversizedHeaders = deframer.oversizedHeaders
        }
        stats.packetsReceived = items.count
        return (items, stats)
    }

    /// The adapter of a monitor capture to replay: the first to deliver an LE (Extended) Advertising Report
    /// (event 0x3E, subevent 0x02 or 0x0D), else the first to send the host anything.
    static func scanningAdapter(in bytes: [UInt8]) throws -> UInt16? {
        var reader = try BtsnoopReader(bytes)
        var firstSpeaker: UInt16?
        while let r = reader.next() {
            guard r.direction == .received else { continue }
            if firstSpeaker == nil { firstSpeaker = r.controllerIndex }
            let p = r.packet.payload
            if r.packet.type == .event, p.count >= 3, p[0] == 0x3E, p[2] == 0x02 || p[2] == 0x0D {
                return r.controllerIndex
            }
        }
        return firstSpeaker
    }

    /// Accepted and discarded: a capture cannot answer.
    public func send(_ packet: H4Packet) throws {}

    public func close() {
        let t: Task<Void, Never>? = lock.withLock { defer { replay = nil }; return replay }
        t?.cancel()
        continuation.finish()
    }
}
