import Foundation
import Glibc
import Testing

@testable import BLETransport

/// The UART and TCP openers against real kernel objects: a pseudo-terminal stands in for the UART
/// (the termios calls are the same), a loopback listener for the HCI-over-TCP bridge.
@Suite struct SerialAndTCPTests {
    let resetBytes: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]

    func readExactly(_ fd: Int32, _ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: count)
        while out.count < count {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, count - out.count) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    @Test func serialOpensAPseudoTerminalRawAndExchangesH4() async throws {
        let pty = try PseudoTerminal.open()
        let master = pty.masterFD
        defer { Glibc.close(master) }
        let path = pty.path
        let t = try H4Stream.openSerial(path: path, baud: 921_600)
        // Raw mode: 0x0D and 0x0A pass untranslated, nothing is echoed.
        let event: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x0D, 0x0A, 0x00]
        _ = event.withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == event)
        try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(readExactly(master, 4) == resetBytes)
        #expect(t.name == "serial:\(path)@921600")
        t.close()
    }

    @Test func serialOnANonTerminalIsAClearError() {
        #expect { try H4Stream.openSerial(path: "/dev/null") } throws: {
            ($0 as? TransportError)?.message.contains("not a terminal") == true
        }
        #expect { try H4Stream.openSerial(path: "/dev/nonexistent-tty") } throws: {
            ($0 as? TransportError)?.kind == .noSuchAdapter
        }
    }

    @Test func tcpConnectsToALoopbackListener() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, len) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &len) == 0
            }
        }
        try #require(ok)
        let port = UInt16(bigEndian: addr.sin_port)
        let t = try H4Stream.connectTCP(host: "127.0.0.1", port: port)
        let peer = accept(listener, nil, nil)
        defer { Glibc.close(peer) }
        try t.send(H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(readExactly(peer, 4) == resetBytes)
        _ = resetComplete.withUnsafeBytes { Glibc.write(peer, $0.baseAddress, $0.count) }
        var it = t.incoming.makeAsyncIterator()
        #expect(try await it.next()?.h4Bytes == resetComplete)
        t.close()
    }
}
