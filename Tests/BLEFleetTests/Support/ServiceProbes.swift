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

/// GET with curl (a real HTTP client), bounded at 20 s: generous, because the bound is not what a test measures and
/// a full parallel run on two cores can keep a route waiting for seconds. A failed GET throws with curl's exit code
/// (22: an HTTP error status, 28: the bound passed) instead of reading as an empty page.
func httpGet(_ url: String) throws -> String {
    let p = Process()
    let out = Pipe()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    p.arguments = ["-sSf", "--max-time", "20", url]
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
        throw TestSetupError(description: "GET \(url): curl exited \(p.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}
