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

    public let name: String
    /// Waits for the host: a replay loses nothing and goes as fast as its slowest stage.
    public let incoming: StageQueue<H4Packet>
    private let lock = NSLock()
    private var stats = TransportStatistics()
    private var replay: Task<Void, Never>?

    /// Packets replayed so far, and what the file lacked: `droppedRecords` counts a final record cut short
    /// (btsnoop) or a final packet cut short (raw H4); `garbageBytes` what the H4 deframer skipped.
    public var statistics: TransportStatistics { lock.withLock { stats } }

    public convenience init(path: String, clock: any BLEClock, pacing: Pacing = .asFastAsPossible) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw TransportError(
                exists ? .io : .noSuchAdapter,
                "cannot read capture \(path)"
                    + (exists ? "" : ": no such file"))
        }
        try self.init(name: "file:\(path)", bytes: [UInt8](data), clock: clock, pacing: pacing)
    }

    /// Replays `bytes` (a whole capture file). The header is checked here (a bad one throws `.badCapture`); the
    /// records are read one at a time as the host takes them, so memory stays that of the file.
    public init(
        name: String, bytes: [UInt8], clock: any BLEClock, pacing: Pacing = .asFastAsPossible,
        queueCapacity: Int = StageQueue<H4Packet>.defaultCapacity
    ) throws {
        self.name = name
        var source = try Self.packets(in: bytes)
        incoming = StageQueue(capacity: queueCapacity, whenFull: .wait)
        let queue = incoming
        let task = Task { [weak self] in
            var start: Duration?
            while let (packet, offset) = source.next() {
                if pacing == .recorded, let offset {
                    let begin = start ?? clock.now()
                    start = begin
                    do { try await clock.sleep(until: begin + offset) } catch { break }
                }
                self?.count { $0.packetsReceived += 1 }
                if await queue.send(packet, essential: !packet.isAdvertisingReport) == .terminated { break }
            }
            self?.count { s in
                s.droppedRecords = source.truncated
                s.garbageBytes = source.garbageBytes
                s.oversizedHeaders = source.oversizedHeaders
            }
            queue.finish()
        }
        incoming.setOnTermination { task.cancel() }
        lock.withLock { replay = task }
    }

    private func count(_ update: (inout TransportStatistics) -> Void) { lock.withLock { update(&stats) } }

    /// The controller→host packets of a capture, one at a time.
    struct PacketSource: Sendable {
        enum Format: Sendable {
            case btsnoop(BtsnoopReader, controller: UInt16?, first: Int64?)
            case h4(H4Deframer)
        }
        var format: Format
        var truncated = 0
        var garbageBytes = 0
        var oversizedHeaders = 0

        /// The next packet and its offset from the first (nil: the format has no times).
        mutating func next() -> (H4Packet, Duration?)? {
            switch format {
            case .btsnoop(var reader, let controller, var first):
                defer {
                    truncated = reader.truncatedRecords
                    format = .btsnoop(reader, controller: controller, first: first)
                }
                while let r = reader.next() {
                    guard r.direction == .received else { continue }
                    if reader.datalink == .linuxMonitor, r.controllerIndex != controller { continue }
                    let base = first ?? r.unixMicroseconds
                    first = base
                    return (r.packet, .microseconds(max(0, r.unixMicroseconds - base)))
                }
                return nil
            case .h4(var deframer):
                defer {
                    garbageBytes = deframer.garbageBytes
                    oversizedHeaders = deframer.oversizedHeaders
                    format = .h4(deframer)
                }
                while let p = deframer.next() {
                    if p.type != .command { return (p, nil) }
                }
                // Whatever is left is a packet cut short at the end of the dump.
                truncated = deframer.pendingBytes > 0 ? 1 : 0
                return nil
            }
        }
    }

    /// Checks the header and sets up the reading: a btsnoop file (datalink 1002 or 2001) by its magic, else a raw
    /// H4 dump, which must hold at least one packet.
    static func packets(in bytes: [UInt8]) throws -> PacketSource {
        if Btsnoop.hasMagic(bytes) || (bytes.count < 8 && Btsnoop.magic.starts(with: bytes) && !bytes.isEmpty) {
            let reader = try BtsnoopReader(bytes)
            // A monitor capture may hold several adapters (a scanner and an advertiser, say): replay the first one
            // that reports an advertisement, or else the first one that speaks.
            let index = reader.datalink == .linuxMonitor ? try Self.scanningAdapter(in: bytes) : nil
            return PacketSource(format: .btsnoop(reader, controller: index, first: nil))
        }
        var deframer = H4Deframer()
        deframer.append(bytes)
        var probe = deframer
        if probe.next() == nil && !bytes.isEmpty {
            throw TransportError(
                .badCapture, "neither a btsnoop file nor an H4 dump: no HCI packet in \(bytes.count) bytes")
        }
        return PacketSource(format: .h4(deframer))
    }

    /// The adapter of a monitor capture to replay: the first to deliver an LE (Extended) Advertising Report
    /// (`H4Packet.isAdvertisingReport`), else the first to send the host anything.
    static func scanningAdapter(in bytes: [UInt8]) throws -> UInt16? {
        var reader = try BtsnoopReader(bytes)
        var firstSpeaker: UInt16?
        while let r = reader.next() {
            guard r.direction == .received else { continue }
            if firstSpeaker == nil { firstSpeaker = r.controllerIndex }
            if r.packet.isAdvertisingReport { return r.controllerIndex }
        }
        return firstSpeaker
    }

    /// Accepted and discarded: a capture cannot answer.
    public func send(_ packet: H4Packet) throws {}

    public func close() {
        let t: Task<Void, Never>? = lock.withLock {
            defer { replay = nil }
            return replay
        }
        t?.cancel()
        incoming.finish()
    }
}
