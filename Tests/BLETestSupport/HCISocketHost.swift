import BLETransport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A host made of literal bytes, on a virtual controller's Unix socket: writes H4 commands as a test spells them and
/// reads whole H4 packets back, with a bounded wait so a broken simulator fails the test instead of hanging it. The
/// one raw HCI client of the tests and the benchmarks; the gateway's own host stack is what they check against it.
public final class HCISocketHost {
    /// Nothing came from the controller within the wait: in `drain`, reports the controller counted as sent never
    /// arrived.
    public struct Timeout: Error, CustomStringConvertible {
        public var waitedMs: Int32
        public var waitingFor: String
        public var description: String { "no packet from the virtual controller within \(waitedMs) ms \(waitingFor)" }
    }
    public struct Closed: Error, CustomStringConvertible {
        public var description: String { "the virtual controller closed its socket" }
    }

    public let fd: Int32
    private var deframer = H4Deframer()
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    /// The controller closed the socket (a simulator whose duration ended): nothing more will come.
    public private(set) var isClosed = false

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        // A socket file appears at bind(2), a moment before listen(2): a refused connect is tried again, briefly.
        var rc: Int32 = -1
        for _ in 0..<200 {
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if rc == 0 || (errno != ECONNREFUSED && errno != ENOENT) { break }
            usleep(5000)
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError(.io, errno: e, "connect \(path)")
        }
    }

    deinit { Glibc.close(fd) }

    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The next packet from the controller.
    public func receive(timeoutMs: Int32 = 10_000) throws -> H4Packet {
        while true {
            if let p = deframer.next() { return p }
            guard read(timeoutMs: timeoutMs) else {
                if isClosed { throw Closed() }
                throw Timeout(waitedMs: timeoutMs, waitingFor: "while waiting for the next packet")
            }
        }
    }

    /// Sends a command and returns the H4 bytes of its Command Complete or Command Status, collecting the other
    /// packets (reports) that came first.
    @discardableResult
    public func command(_ bytes: [UInt8], before other: inout [H4Packet]) throws -> [UInt8] {
        send(bytes)
        let opcode = (bytes[1], bytes[2])
        while true {
            let p = try receive()
            let e = p.payload
            if p.type == .event, e[0] == 0x0E, e.count >= 5, (e[3], e[4]) == opcode { return p.h4Bytes }
            if p.type == .event, e[0] == 0x0F, e.count >= 6, (e[4], e[5]) == opcode { return p.h4Bytes }
            other.append(p)
        }
    }

    @discardableResult
    public func command(_ bytes: [UInt8]) throws -> [UInt8] {
        var ignored: [H4Packet] = []
        return try command(bytes, before: &ignored)
    }

    /// Hands packets to `body` until `done()` holds (waiting up to `timeoutMs` for each read), then those already
    /// written; returns early when the controller closes the socket.
    public func drain(until done: () -> Bool, timeoutMs: Int32 = 10_000, _ body: (H4Packet) -> Void) throws {
        while true {
            while let p = deframer.next() { body(p) }
            if done() { break }
            guard read(timeoutMs: timeoutMs) else {
                if isClosed { return }
                throw Timeout(
                    waitedMs: timeoutMs,
                    waitingFor: "while draining: reports the controller counted as sent never arrived")
            }
        }
        while read(timeoutMs: 0) {
            while let p = deframer.next() { body(p) }
        }
    }

    /// Reads what the controller has written within `timeoutMs`: whether anything came (false on timeout or at the
    /// end of the stream, which sets `isClosed`).
    private func read(timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, timeoutMs) > 0 else { return false }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else {
            isClosed = true
            return false
        }
        deframer.append(buffer[0..<n])
        return true
    }
}
