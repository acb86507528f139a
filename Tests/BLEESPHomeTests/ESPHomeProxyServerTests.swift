import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEESPHome

/// The proxy's server alone, against a raw socket: what a client can do to it that no well-behaved library does.
@Suite(.timeLimit(.minutes(1)))
struct ESPHomeProxyServerTests {
    /// A plaintext proxy on an ephemeral port of 127.0.0.1, running until `body` returns.
    func withProxy(_ body: (ESPHomeProxy, Int) async throws -> Void) async throws {
        var c = ESPHomeProxyConfiguration(name: "gw-test", port: 0)
        c.host = "127.0.0.1"
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let proxy = ESPHomeProxy(
            configuration: c, version: "test", clock: SystemClock(), logger: Logger(label: "esphome-test"),
            onListening: { listening.yield($0) })
        let server = Task { try await proxy.run() }
        defer { server.cancel() }
        var next = ports.makeAsyncIterator()
        let port = try #require(await next.next())
        try await body(proxy, port)
    }

    /// What it proves: replies are bounded and the client past the bound is cut and counted. It does not tell a client
    /// that never reads from one that sends more than 256 requests in one read (the bound counts replies not yet
    /// written, and one read's requests are all answered before the writer runs).
    @Test func aClientFloodingRequestsItDoesNotReadIsCutAndCountedNotBufferedWithoutEnd() async throws {
        signal(SIGPIPE, SIG_IGN)
        try await withProxy { proxy, port in
            let fd = try Loopback.openConnection(port: port, receiveBuffer: 4096)
            defer { close(fd) }
            // 100,000 plaintext PingRequests (indicator 0, length 0, type 7), 300 kB; each is answered with a
            // 3-byte PingResponse the client never reads. Once the socket's buffers and NIO's are full, the replies
            // pile up in the outbox: past 256 the proxy cuts the connection, and this send fails or ends.
            let ping: [UInt8] = [0x00, 0x00, UInt8(ESPHomeMessageType.pingRequest.rawValue)]
            let burst = [UInt8]((0..<100_000).flatMap { _ in ping })
            let sender = Task.detached {
                var offset = 0
                while offset < burst.count {
                    let n = burst[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                    guard n > 0 else { return }
                    offset += n
                }
            }
            try await waitUntil("the client cut", limit: .seconds(30)) { proxy.statistics.stalledClients == 1 }
            try await waitUntil("its connection gone", limit: .seconds(30)) { proxy.statistics.clients == 0 }
            await sender.value
            #expect(proxy.statistics.protocolErrors == 0)
        }
    }
}
