import BLETransport
import Foundation
import Glibc

/// Transport throughput: how many LE Advertising Report packets per second the H4 deframer splits,
/// and how many cross a Unix socketpair into `incoming` (reader thread + framing + AsyncStream).
/// `blegateway-bench transport [--packets N]`.
func runTransportBenchmark(args: [String]) async throws {
    var count = 200_000
    if let i = args.firstIndex(of: "--packets"), i + 1 < args.count, let n = Int(args[i + 1]) { count = n }
    // One LE Advertising Report (Core v5.4, Vol 4, Part E, §7.7.65.2) with a 30-byte iBeacon payload.
    let report: [UInt8] =
        [
            0x04, 0x3E, 0x2A, 0x02, 0x01, 0x03, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x1E,
            0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15,
        ]
        + [UInt8](repeating: 0xAB, count: 16) + [0x00, 0x01, 0x00, 0x02, 0xC5, 0xC4]
    var stream: [UInt8] = []
    stream.reserveCapacity(report.count * 1000)
    for _ in 0..<1000 { stream += report }

    // Deframer alone.
    var deframer = H4Deframer()
    let t0 = ContinuousClock.now
    var n = 0
    while n < count {
        deframer.append(stream)
        while deframer.next() != nil { n += 1 }
    }
    let d0 = (ContinuousClock.now - t0).seconds
    print(
        String(
            format: "transport: deframer %.0f packets/s (%.1f MB/s)", Double(n) / d0,
            Double(n * report.count) / d0 / 1e6))

    // Socketpair → FileDescriptorTransport (via a listening Unix socket, as `unix:PATH` opens it).
    let path = NSTemporaryDirectory() + "blegw-bench-\(getpid()).sock"
    unlink(path)
    let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
    _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    listen(listener, 1)
    defer {
        close(listener)
        unlink(path)
    }
    let transport = try H4Stream.connectUnix(path: path)
    let peer = accept(listener, nil, nil)
    let total = count
    let data = stream
    let writer = Thread {
        var sent = 0
        while sent < total {
            let chunk = min(1000, total - sent)
            let bytes = data[0..<(chunk * report.count)]
            var off = bytes.startIndex
            while off < bytes.endIndex {
                let w = bytes[off...].withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
                if w <= 0 { return }
                off += w
            }
            sent += chunk
        }
        close(peer)
    }
    let t1 = ContinuousClock.now
    writer.start()
    var received = 0
    for try await _ in transport.incoming { received += 1 }
    let d1 = (ContinuousClock.now - t1).seconds
    print(
        String(
            format: "transport: unix socket → incoming %.0f packets/s (%d packets, %.2f s)",
            Double(received) / d1, received, d1))
}
