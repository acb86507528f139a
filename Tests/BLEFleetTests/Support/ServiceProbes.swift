import BLETestSupport
import Foundation

struct TestSetupError: Error, CustomStringConvertible { let description: String }

/// Waits (bounded, 5 s) until something accepts TCP connections on the loopback port.
func waitUntilListening(port: Int, what: String) throws {
    for _ in 0..<500 {
        if Loopback.accepts(port: port) { return }
        usleep(10_000)
    }
    throw TestSetupError(description: "\(what) did not listen on port \(port)")
}

/// Runs blocking test plumbing (a socket probe, a curl child) on a dispatch thread, so the cooperative pool stays
/// free for the service under test: on two cores, two blocked pool threads would starve it.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        DispatchQueue.global().async { c.resume(with: Result { try body() }) }
    }
}

/// GET with curl (a real HTTP client), bounded.
func httpGet(_ url: String) throws -> String {
    let p = Process()
    let out = Pipe()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    p.arguments = ["-sf", "--max-time", "5", url]
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
