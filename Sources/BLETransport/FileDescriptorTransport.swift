import Foundation

/// An `HCITransport` over one file descriptor: a dedicated thread does blocking reads, frames them
/// and feeds `incoming`; `send` writes whole packets from the caller's thread; `close()` wakes the
/// reader, which then closes the descriptor and finishes the stream.
///
/// Used for H4 byte streams (Unix, TCP, serial) and the kernel's exclusive HCI user channel.
///
/// `whenFull` says what the source can afford when the host falls behind: a socket whose peer waits (the simulator,
/// an H4 bridge) is `.wait` — the reader stops reading, the peer's writes block, nothing is lost; a live controller
/// (the kernel's sockets, a UART) is `.drop` — advertising reports beyond the queue's bound are counted and dropped
/// (`statistics.droppedReports`), everything else is kept.
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    public let name: String
    public let incoming: StageQueue<H4Packet>

    private let descriptor: OwnedDescriptor
    private let lock = NSLock()
    private var stats = TransportStatistics()
    private let acceptsSend: Bool

    /// Link counters, including the deframer's garbage counts.
    public var statistics: TransportStatistics {
        var s = lock.withLock { stats }
        s.droppedReports = incoming.dropped
        return s
    }

    /// Takes ownership of `fd` and starts the reader thread.
    init(
        name: String, fd: Int32, framer: some PacketFramer & Sendable, acceptsSend: Bool = true,
        readBufferSize: Int = 4096, whenFull: StageQueue<H4Packet>.WhenFull,
        queueCapacity: Int = StageQueue<H4Packet>.defaultCapacity
    ) throws {
        self.name = name
        self.descriptor = try OwnedDescriptor(fd)
        self.acceptsSend = acceptsSend
        incoming = StageQueue(capacity: queueCapacity, whenFull: whenFull)
        incoming.setOnTermination { [descriptor] in descriptor.close() }
        let thread = Thread { [self] in self.readLoop(framer: framer, bufferSize: readBufferSize) }
        thread.name = "hci-reader \(name)"
        thread.start()
    }

    deinit { descriptor.close() }

    private func readLoop(framer initial: some PacketFramer, bufferSize: Int) {
        var framer = initial
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer {
            buffer.deallocate()
            descriptor.release()
        }
        do {
            while true {
                guard let n = try descriptor.read(into: buffer) else { break }
                if n == 0 { break }  // end of input: the peer closed the stream
                let packets = try framer.consume(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                lock.withLock {
                    stats.bytesReceived += n
                    stats.packetsReceived += packets.count
                    stats.garbageBytes = framer.garbageBytes
                    stats.oversizedHeaders = framer.oversizedHeaders
                }
                for p in packets {
                    if incoming.sendBlocking(p, essential: !p.isAdvertisingReport) == .terminated { break }
                }
            }
            incoming.finish()
        } catch {
            incoming.finish(throwing: error)
        }
    }

    public func send(_ packet: H4Packet) throws {
        guard acceptsSend else { throw TransportError(.unsupported, "\(name) is receive-only") }
        try descriptor.writeAll(packet.h4Bytes, what: "write to \(name)")
        lock.withLock { stats.packetsSent += 1 }
    }

    public func close() { descriptor.close() }

    /// Whether `close()` was called or the consumer of `incoming` went away.
    var isClosed: Bool { descriptor.isClosing }
}
