import BLETransport
import Foundation
import Glibc

/// One host connection to a virtual controller: an accepted Unix stream socket carrying H4 bytes.
///
/// The connection owns its fd. A reader thread blocks in read(2) and hands each whole packet to
/// `onPacket`; a writer thread drains the outbox with send(2). Blocking threads rather than Swift
/// tasks because a blocked read must not hold one of the (two, on this machine) cooperative
/// threads. `close()` from anywhere shuts the socket down; the reader thread, last to touch the
/// fd, closes it after the writer has stopped.
final class HostConnection: @unchecked Sendable {
    let fd: Int32
    private let cond = NSCondition()
    private var outbox: [UInt8] = []
    private var closed = false
    private var writerDone = false
    /// Bytes handed to the kernel so far, and the end offset of the last command response:
    /// a command arriving before that response was written was sent without credit.
    private var enqueuedTotal = 0
    private var writtenTotal = 0
    private var lastResponseEnd = 0

    /// Bytes above which reports are dropped (paced runs: a slow host loses reports, as with a
    /// real controller's full buffer) or the radio waits (free-running runs).
    static let highWater = 4 << 20

    init(fd: Int32) { self.fd = fd }

    /// Starts the reader and writer threads. `onPacket` runs on the reader thread; `onGarbage`
    /// gets the deframer's running count of dropped bytes; `onClose` runs once, at the end.
    func start(
        onPacket: @escaping @Sendable (H4Packet) -> Void, onGarbage: @escaping @Sendable (Int) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) {
        let writer = Thread { [self] in writeLoop() }
        writer.name = "sim-writer"
        writer.start()
        let reader = Thread { [self] in
            var deframer = H4Deframer(maxPayload: 1024)
            var buf = [UInt8](repeating: 0, count: 4096)
            var reportedGarbage = 0
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                deframer.append(buf[0..<n])
                // Garbage is counted before the packet that follows it is answered, so a host that
                // sees the answer also sees the count.
                while true {
                    let p = deframer.next()
                    if deframer.garbageBytes != reportedGarbage {
                        onGarbage(deframer.garbageBytes - reportedGarbage)
                        reportedGarbage = deframer.garbageBytes
                    }
                    guard let p else { break }
                    onPacket(p)
                }
            }
            close()
            cond.lock()
            while !writerDone { cond.wait() }
            cond.unlock()
            _ = Glibc.close(fd)
            onClose()
        }
        reader.name = "sim-reader"
        reader.start()
    }

    var isClosed: Bool { cond.withLock { closed } }
    var pendingBytes: Int { cond.withLock { enqueuedTotal - writtenTotal } }

    /// Queues a command's events. Returns true if the host sent this command while the previous
    /// command's response was still unwritten, i.e. without a Num_HCI_Command_Packets credit.
    func enqueueResponse(_ events: [[UInt8]]) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        let violated = writtenTotal < lastResponseEnd
        for e in events {
            outbox += e
            enqueuedTotal += e.count
        }
        lastResponseEnd = enqueuedTotal
        cond.signal()
        return violated
    }

    /// Queues unsolicited events (reports, errors). With `dropIfFull`, refuses when the host has
    /// fallen more than `highWater` behind; returns whether the bytes were queued.
    func enqueue(_ bytes: [UInt8], dropIfFull: Bool) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        if closed { return false }
        if dropIfFull && enqueuedTotal - writtenTotal > Self.highWater { return false }
        outbox += bytes
        enqueuedTotal += bytes.count
        cond.signal()
        return true
    }

    /// Stops both threads; safe from any thread, any number of times.
    func close() {
        cond.lock()
        let first = !closed
        closed = true
        cond.broadcast()
        cond.unlock()
        if first { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func writeLoop() {
        var chunk: [UInt8] = []
        while true {
            cond.lock()
            while outbox.isEmpty && !closed { cond.wait() }
            if closed {
                writerDone = true
                cond.broadcast()
                cond.unlock()
                return
            }
            swap(&chunk, &outbox)
            cond.unlock()
            var off = 0
            while off < chunk.count {
                let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                off += n
            }
            cond.lock()
            writtenTotal += off
            cond.broadcast()
            cond.unlock()
            if off < chunk.count {
                close()
            }
            chunk.removeAll(keepingCapacity: true)
        }
    }
}

/// A listening Unix stream socket at a path; removed when closed.
struct UnixListener {
    let fd: Int32
    let path: String

    init(path: String) throws {
        unlink(path)
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else {
            throw TransportError(.io, errno: errno, "socket(AF_UNIX): \(String(cString: strerror(errno)))")
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            Glibc.close(s)
            throw TransportError(.badSpec, "socket path too long (\(bytes.count) bytes): \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0, listen(s, 4) == 0 else {
            let e = errno
            Glibc.close(s)
            throw TransportError(.io, errno: e, "bind/listen \(path): \(String(cString: strerror(e)))")
        }
        fd = s
        self.path = path
    }

    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}
