import BLETestSupport
import Foundation
import Glibc
import Testing

@testable import BLETransport

/// Literal byte exchanges over real sockets: one end is the transport, the test plays the controller.
@Suite struct FileDescriptorTransportTests {
    let resetBytes: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    // LE Advertising Report, one report, ADV_NONCONN_IND, public 06:05:04:03:02:01, 3 data bytes, RSSI -60.
    let report: [UInt8] = [
        0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
        0x03, 0x02, 0x01, 0x06, 0xC4,
    ]

    func socketPair(_ type: Int32 = Int32(SOCK_STREAM.rawValue)) throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw TransportError.fromErrno(errno, "socketpair") }
        return (fds[0], fds[1])
    }

    func write(_ fd: Int32, _ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        #expect(n == bytes.count)
    }

    func read(_ fd: Int32, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: count)
        while out.count < count {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, count - out.count) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    @Test func streamDeliversPacketsSplitAndMergedAcrossWrites() async throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let t = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        var it = t.incoming.makeAsyncIterator()
        let all = resetComplete + report
        write(peer, Array(all[0..<3]))
        write(peer, Array(all[3..<12]))
        write(peer, Array(all[12...]))
        #expect(try await it.next()?.h4Bytes == resetComplete)
        #expect(try await it.next()?.h4Bytes == report)
        t.close()
        #expect(try await it.next() == nil)
        #expect(t.statistics.packetsReceived == 2)
    }

    @Test func sendWritesTheWholeH4Packet() throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let t = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(read(peer, count: 4) == resetBytes)
        #expect(t.statistics.packetsSent == 1)
        t.close()
    }

    @Test func garbageOnTheLineIsCountedInStatistics() async throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let t = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        write(peer, [0xFF, 0x00] + resetComplete)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == resetComplete)
        #expect(t.statistics.garbageBytes == 2)
        t.close()
    }

    @Test func peerClosingFinishesTheStream() async throws {
        let (mine, peer) = try socketPair()
        let t = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        write(peer, resetComplete)
        Glibc.close(peer)
        var got: [H4Packet] = []
        for try await p in t.incoming { got.append(p) }
        #expect(got.map(\.h4Bytes) == [resetComplete])
    }

    @Test func closeIsIdempotentAndLaterSendsFailAsClosed() async throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let t = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        t.close()
        t.close()
        for try await _ in t.incoming {}
        #expect { try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00])) } throws: {
            ($0 as? TransportError)?.kind == .closed
        }
    }

    @Test func datagramFramerTakesOnePacketPerRead() async throws {
        // SOCK_SEQPACKET keeps message boundaries like the kernel's HCI user channel.
        let (mine, peer) = try socketPair(Int32(SOCK_SEQPACKET.rawValue))
        defer { Glibc.close(peer) }
        let t = try FileDescriptorTransport(name: "user", fd: mine, framer: H4DatagramFramer(), whenFull: .drop)
        write(peer, resetComplete)
        write(peer, [0x04])  // too short to be a packet: counted, not delivered
        write(peer, report)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == resetComplete)
        #expect(try await it.next()?.h4Bytes == report)
        #expect(t.statistics.garbageBytes == 1)
        t.close()
    }

    @Test func connectsToAListeningUnixSocketAndExchangesBytes() async throws {
        let path = NSTemporaryDirectory() + "blegw-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer {
            Glibc.close(listener)
            unlink(path)
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        #expect(listen(listener, 1) == 0)

        let t = try H4Stream.connectUnix(path: path)
        let controller = accept(listener, nil, nil)
        defer { Glibc.close(controller) }
        try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(read(controller, count: 4) == resetBytes)
        write(controller, resetComplete)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == resetComplete)
        #expect(t.name == "unix:\(path)")
        t.close()
    }

    @Test func nothingListeningIsNoSuchAdapter() {
        #expect { try H4Stream.connectUnix(path: "/nonexistent/blegw.sock") } throws: {
            ($0 as? TransportError)?.kind == .noSuchAdapter
        }
    }

    @Test func capturingWrapperWritesBothDirections() async throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let path = NSTemporaryDirectory() + "blegw-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { unlink(path) }
        let clock = ManualClock()
        let inner = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        let t = CapturingTransport(wrapping: inner, writer: try BtsnoopFileWriter(path: path), clock: clock)
        try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(read(peer, count: 4) == resetBytes)
        write(peer, resetComplete)
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == resetComplete)
        t.close()
        #expect(try await it.next() == nil)
        t.writer.close()

        var reader = try BtsnoopReader([UInt8](try #require(FileManager.default.contents(atPath: path))))
        let sent = reader.next()
        let received = reader.next()
        #expect(sent?.direction == .sent && sent?.packet.h4Bytes == resetBytes)
        #expect(received?.direction == .received && received?.packet.h4Bytes == resetComplete)
        #expect(received?.unixMicroseconds == 1_700_000_000_000_000)  // ManualClock's origin
    }

    /// The capture writes what the redaction leaves of a packet (the upper layers zero keys there); the link carries
    /// the packet as it was.
    @Test func theCaptureHoldsTheRedactedPacketAndTheLinkTheWholeOne() async throws {
        let (mine, peer) = try socketPair()
        defer { Glibc.close(peer) }
        let path = NSTemporaryDirectory() + "blegw-redacted-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { unlink(path) }
        let inner = try FileDescriptorTransport(name: "pair", fd: mine, framer: H4StreamFramer(), whenFull: .wait)
        let t = CapturingTransport(
            wrapping: inner, writer: try BtsnoopFileWriter(path: path), clock: ManualClock(),
            redaction: { H4Packet(type: $0.type, payload: $0.payload.map { _ in 0 }) })
        try t.send(H4Packet(type: .command, payload: [0x1A, 0x20, 0x01, 0x7F]))
        #expect(read(peer, count: 5) == [0x01, 0x1A, 0x20, 0x01, 0x7F])
        t.close()
        t.writer.close()
        var reader = try BtsnoopReader([UInt8](try #require(FileManager.default.contents(atPath: path))))
        #expect(reader.next()?.packet.h4Bytes == [0x01, 0, 0, 0, 0])
    }
}
