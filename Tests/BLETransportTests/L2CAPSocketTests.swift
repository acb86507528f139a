import BLETestSupport
import Foundation
import Glibc
import Testing

@testable import BLETransport

/// The L2CAP socket's own machinery (whole PDUs, end of link, close, the connect deadline) over AF_UNIX
/// sequenced-packet pairs, which keep message boundaries as BTPROTO_L2CAP's SOCK_SEQPACKET does. The host has
/// no Bluetooth: the kernel's side is exercised in the VM (Tests/kernel/guest-l2cap.sh).
@Suite struct L2CAPSocketTests {
    let local = L2CAPAddress("00:AA:01:00:00:00", type: .public)!
    let peer = L2CAPAddress("00:AA:01:01:00:01", type: .public)!
    // Exchange MTU Response, Server Rx MTU 247 (Vol 3, Part F, §3.4.2.2).
    let mtuResponse: [UInt8] = [0x03, 0xF7, 0x00]
    // Handle Value Notification, handle 0x0006, Temperature 21.50 °C (0x0866) (§3.4.7.1).
    let notification: [UInt8] = [0x1B, 0x06, 0x00, 0x66, 0x08]
    // Exchange MTU Request, Client Rx MTU 247 (§3.4.2.1).
    let mtuRequest: [UInt8] = [0x02, 0xF7, 0x00]

    /// (ours, non-blocking as `cbt_l2cap_socket` makes it; the test's end).
    func seqpacketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0 else {
            throw TransportError.fromErrno(errno, "socketpair")
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    func write(_ fd: Int32, _ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        #expect(n == bytes.count)
    }

    func readOne(_ fd: Int32) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 1024)
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? Array(buf[0..<n]) : []
    }

    @Test func eachReadIsOneWholePDUInOrder() async throws {
        let (mine, theirs) = try seqpacketPair()
        defer { Glibc.close(theirs) }
        let socket = try L2CAPSocket(fd: mine, local: local, peer: peer, adapterName: "hci0")
        defer { socket.close() }
        write(theirs, mtuResponse)
        write(theirs, notification)
        var it = socket.incoming.makeAsyncIterator()
        #expect(await it.next() == mtuResponse)
        #expect(await it.next() == notification)
    }

    @Test func sendWritesOnePDUAsOnePacket() throws {
        let (mine, theirs) = try seqpacketPair()
        defer { Glibc.close(theirs) }
        let socket = try L2CAPSocket(fd: mine, local: local, peer: peer, adapterName: "hci0")
        defer { socket.close() }
        try socket.send(mtuRequest)
        try socket.send(notification)
        #expect(readOne(theirs) == mtuRequest)
        #expect(readOne(theirs) == notification)
    }

    @Test func thePeerClosingEndsIncomingWithoutAnError() async throws {
        let (mine, theirs) = try seqpacketPair()
        let socket = try L2CAPSocket(fd: mine, local: local, peer: peer, adapterName: "hci0")
        write(theirs, notification)
        Glibc.close(theirs)
        var received: [[UInt8]] = []
        for await pdu in socket.incoming { received.append(pdu) }
        #expect(received == [notification])
        #expect(socket.endReason == nil)
    }

    @Test func closeFinishesIncomingAndLaterSendsFailAsClosed() async throws {
        let (mine, theirs) = try seqpacketPair()
        defer { Glibc.close(theirs) }
        let socket = try L2CAPSocket(fd: mine, local: local, peer: peer, adapterName: "hci0")
        socket.close()
        var it = socket.incoming.makeAsyncIterator()
        #expect(await it.next() == nil)
        #expect(throws: TransportError.self) { try socket.send(mtuRequest) }
        do {
            try socket.send(mtuRequest)
        } catch let error as TransportError {
            #expect(error.kind == .closed)
        }
    }

    @Test func theNameSaysAdapterAndPeerWithItsType() throws {
        let (mine, theirs) = try seqpacketPair()
        defer { Glibc.close(theirs) }
        let socket = try L2CAPSocket(fd: mine, local: local, peer: peer, adapterName: "hci0")
        defer { socket.close() }
        #expect(socket.name == "hci0 → 00:AA:01:01:00:01 (public)")
    }

    @Test func aConnectThatNeverCompletesEndsAtTheClocksDeadline() async throws {
        // The read end of a pipe never becomes writable: a connect that the peer never answers.
        var p: [Int32] = [-1, -1]
        #expect(pipe(&p) == 0)
        defer {
            Glibc.close(p[0])
            Glibc.close(p[1])
        }
        let clock = ManualClock()
        let readEnd = p[0]
        let waiting = Task { try await L2CAPSocket.awaitWritable(fd: readEnd, timeout: .seconds(5), clock: clock) }
        await clock.untilSleeping()
        clock.advance(by: .seconds(4))
        clock.advance(by: .seconds(1))
        #expect(try await waiting.value == false)
    }

    @Test func aConnectThatCompletesReturnsBeforeTheDeadline() async throws {
        var p: [Int32] = [-1, -1]
        #expect(pipe(&p) == 0)
        defer {
            Glibc.close(p[0])
            Glibc.close(p[1])
        }
        let clock = ManualClock()
        // The write end of an empty pipe is writable at once; the clock never moves.
        #expect(try await L2CAPSocket.awaitWritable(fd: p[1], timeout: .seconds(5), clock: clock) == true)
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellingAConnectWaitWakesThePoll() async throws {
        var p: [Int32] = [-1, -1]
        #expect(pipe(&p) == 0)
        defer {
            Glibc.close(p[0])
            Glibc.close(p[1])
        }
        let clock = ManualClock()
        let readEnd = p[0]
        let waiting = Task { try await L2CAPSocket.awaitWritable(fd: readEnd, timeout: .seconds(5), clock: clock) }
        await clock.untilSleeping()
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test func aConnectThroughAnAdapterThatIsNotThereFailsClearly() async throws {
        let clock = ManualClock()
        do {
            _ = try await L2CAPSocket.connect(to: peer, adapter: "hci99", timeout: .seconds(5), clock: clock)
            Issue.record("connected through hci99")
        } catch let error as TransportError {
            // A kernel without Bluetooth (this host) says so; one with it has no hci99.
            #expect(error.kind == .unsupported || error.kind == .noSuchAdapter)
            #expect(error.message.contains("hci99") || error.message.contains("no Bluetooth"))
        }
    }

    @Test func aMalformedAdapterIsABadSpec() async throws {
        do {
            _ = try await L2CAPSocket.connect(to: peer, adapter: "usb0", timeout: .seconds(5), clock: ManualClock())
            Issue.record("connected through usb0")
        } catch let error as TransportError {
            #expect(error.kind == .badSpec)
        }
    }
}

/// The listener's accept/close machinery over an AF_UNIX sequenced-packet listening socket (the kernel's
/// L2CAP listen itself runs only in the VM).
@Suite struct L2CAPListenerTests {
    let local = L2CAPAddress("00:AA:01:01:00:01", type: .public)!

    func unixListener() throws -> (fd: Int32, path: String) {
        let path = NSTemporaryDirectory() + "l2cap-listener-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        #expect(fd >= 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(r == 0)
        #expect(listen(fd, 4) == 0)
        return (fd, path)
    }

    func connectClient(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(r == 0)
        return fd
    }

    @Test func acceptGivesASocketThatCarriesWholePDUs() async throws {
        let (fd, path) = try unixListener()
        defer { unlink(path) }
        let listener = L2CAPListener(listening: fd, local: local, channel: L2CAPSocket.attChannel, adapterName: "hci1")
        defer { listener.close() }
        let client = connectClient(path)
        defer { Glibc.close(client) }
        let link = try await listener.accept()
        defer { link.close() }
        // Exchange MTU Request, Client Rx MTU 247 (Vol 3, Part F, §3.4.2.1), and its response.
        let request: [UInt8] = [0x02, 0xF7, 0x00]
        _ = request.withUnsafeBytes { Glibc.write(client, $0.baseAddress, $0.count) }
        var it = link.incoming.makeAsyncIterator()
        #expect(await it.next() == request)
        try link.send([0x03, 0xF7, 0x00])
        var buf = [UInt8](repeating: 0, count: 64)
        let n = buf.withUnsafeMutableBytes { Glibc.read(client, $0.baseAddress, $0.count) }
        #expect(Array(buf.prefix(max(n, 0))) == [0x03, 0xF7, 0x00])
    }

    @Test func closeWakesAPendingAcceptWithAClosedError() async throws {
        let (fd, path) = try unixListener()
        defer { unlink(path) }
        let listener = L2CAPListener(listening: fd, local: local, channel: L2CAPSocket.attChannel, adapterName: "hci1")
        let accepting = Task { try await listener.accept() }
        listener.close()
        do {
            _ = try await accepting.value
            Issue.record("accepted after close")
        } catch let error as TransportError {
            #expect(error.kind == .closed)
        }
        // And later accepts fail the same way at once.
        await #expect(throws: TransportError.self) { _ = try await listener.accept() }
    }

    @Test func cancellingAnAcceptEndsIt() async throws {
        let (fd, path) = try unixListener()
        defer { unlink(path) }
        let listener = L2CAPListener(listening: fd, local: local, channel: L2CAPSocket.attChannel, adapterName: "hci1")
        defer { listener.close() }
        let accepting = Task { try await listener.accept() }
        accepting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await accepting.value }
    }
}
