/// Turns what one `read` returned into packets. The transport's reader thread owns its framer;
/// framers are pure (no I/O), so they are tested with literal bytes.
protocol PacketFramer {
    /// Packets completed by `bytes`; throws a `TransportError` when the input cannot be a packet stream.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws -> [H4Packet]
    /// Garbage counters for `TransportStatistics`.
    var garbageBytes: Int { get }
    var oversizedHeaders: Int { get }
}

/// A byte stream (UART, Unix or TCP socket): packets may be split or merged across reads.
struct H4StreamFramer: PacketFramer {
    var deframer = H4Deframer()

    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws -> [H4Packet] {
        deframer.append(bytes)
        var out: [H4Packet] = []
        while let p = deframer.next() { out.append(p) }
        return out
    }

    var garbageBytes: Int { deframer.garbageBytes }
    var oversizedHeaders: Int { deframer.oversizedHeaders }
}

/// A socket that returns exactly one H4 packet per read (Linux HCI_CHANNEL_USER): the indicator,
/// then the packet. A read too short to hold an indicator is counted as garbage.
struct H4DatagramFramer: PacketFramer {
    private(set) var garbageBytes = 0
    var oversizedHeaders: Int { 0 }

    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws -> [H4Packet] {
        guard let indicator = bytes.first, bytes.count >= 2 else {
            garbageBytes += bytes.count
            return []
        }
        return [H4Packet(type: H4PacketType(rawValue: indicator), payload: Array(bytes[1...]))]
    }
}

/// Counters a transport keeps about its link.
public struct TransportStatistics: Sendable, Hashable {
    public var packetsReceived = 0
    public var packetsSent = 0
    public var bytesReceived = 0
    /// Bytes the H4 deframer dropped while resynchronising (line noise on a UART, a wrong baud rate).
    public var garbageBytes = 0
    /// Headers that announced an impossible length.
    public var oversizedHeaders = 0
    /// Records skipped in a capture (truncated final record) or packets the source reported lost.
    public var droppedRecords = 0
    /// Advertising reports a live source dropped because the host fell behind (the queue after the reader was full).
    public var droppedReports = 0

    public init() {}
}

/// Transports that keep `TransportStatistics`; the adapter lifecycle publishes them
/// (`(transport as? any TransportStatisticsProviding)?.statistics`).
public protocol TransportStatisticsProviding {
    var statistics: TransportStatistics { get }
}

extension FileDescriptorTransport: TransportStatisticsProviding {}
extension KernelSharedTransport: TransportStatisticsProviding {}
extension CaptureReplayTransport: TransportStatisticsProviding {}
extension CapturingTransport: TransportStatisticsProviding {
    /// The inner transport's, plus what the recorder's own queue dropped (it has the inner queue's bound and nature).
    public var statistics: TransportStatistics {
        var s = (inner as? any TransportStatisticsProviding)?.statistics ?? TransportStatistics()
        s.droppedReports += incoming.dropped
        return s
    }
}
