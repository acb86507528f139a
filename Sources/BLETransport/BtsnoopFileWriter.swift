import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Appends packets to a btsnoop file (datalink 1002, H4), readable by Wireshark and `btmon -r`.
/// The one owner of the file's descriptor; safe to call from the reader thread and senders alike.
public final class BtsnoopFileWriter: @unchecked Sendable {
    public let path: String
    private let lock = NSLock()
    private var fd: Int32
    /// Records written.
    public private(set) var records = 0

    /// Creates (or truncates) `path` and writes the header.
    public init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TransportError.fromErrno(errno, "create capture \(path)") }
        try write(Btsnoop.header(datalink: .h4))
    }

    deinit { close() }

    private func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw TransportError.fromErrno(errno, "write capture \(path)")
                }
                off += n
            }
        }
    }

    /// Appends one record, stamped `unixTime` (seconds since 1970). One `write` per record, so a
    /// crash leaves at most the final record truncated, which the reader skips.
    public func append(_ packet: H4Packet, direction: Btsnoop.Direction, unixTime: Double) throws {
        let bytes = Btsnoop.record(packet, direction: direction, unixMicroseconds: Int64((unixTime * 1e6).rounded()))
        try lock.withLock {
            guard fd >= 0 else { throw TransportError(.closed, "capture \(path) is closed") }
            try write(bytes)
            records += 1
        }
    }

    public func close() {
        lock.withLock {
            if fd >= 0 {
                _ = Glibc.close(fd)
                fd = -1
            }
        }
    }
}

/// Records both directions of another transport into a btsnoop file (`--capture FILE`), and
/// otherwise behaves exactly like it. A failing capture never breaks the link: it is counted.
public final class CapturingTransport: HCITransport, @unchecked Sendable {
    public let inner: any HCITransport
    public let writer: BtsnoopFileWriter
    public var name: String { inner.name }
    /// The inner transport's packets, with its `whenFull`: recording adds no loss of its own.
    public let incoming: StageQueue<H4Packet>
    private let clock: any BLEClock
    private let lock = NSLock()
    private var failures = 0
    private var forwarder: Task<Void, Never>?

    /// Capture writes that failed (disk full…).
    public var captureFailures: Int { lock.withLock { failures } }

    /// What is written of each packet (the link itself carries it unchanged).
    private let redaction: @Sendable (H4Packet) -> H4Packet

    public init(
        wrapping inner: any HCITransport, writer: BtsnoopFileWriter, clock: any BLEClock,
        redaction: (@Sendable (H4Packet) -> H4Packet)? = nil
    ) {
        self.inner = inner
        self.writer = writer
        self.clock = clock
        let redaction = redaction ?? { $0 }
        self.redaction = redaction
        let source = inner.incoming
        let queue = StageQueue<H4Packet>(capacity: source.capacity, whenFull: source.whenFull)
        incoming = queue
        let task = Task { [weak self, writer, clock, redaction] in
            do {
                for try await p in source {
                    do { try writer.append(redaction(p), direction: .received, unixTime: clock.unixTime()) } catch {
                        self?.countFailure()
                    }
                    if await queue.send(p, essential: !p.isAdvertisingReport) == .terminated { break }
                }
                queue.finish()
            } catch {
                queue.finish(throwing: error)
            }
        }
        queue.setOnTermination {
            task.cancel()
            inner.close()
        }
        forwarder = task
    }

    public func send(_ packet: H4Packet) throws {
        try inner.send(packet)
        do { try writer.append(redaction(packet), direction: .sent, unixTime: clock.unixTime()) } catch {
            countFailure()
        }
    }

    private func countFailure() { lock.withLock { failures += 1 } }

    public func close() {
        inner.close()
    }
}
