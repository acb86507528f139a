import Foundation

/// A real mosquitto on a free loopback port for the fleet service's tests; `stop()` is SIGKILL (a broker that goes
/// away without a word), `start()` again reuses the port so clients can reconnect.
final class LocalBroker: @unchecked Sendable {
    static let executable = "/usr/sbin/mosquitto"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    let directory: URL
    let port: Int
    private var process: Process?

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-broker-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try freeLoopbackPort()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func start() throws {
        var lines = ["listener \(port) 127.0.0.1", "allow_anonymous true", "persistence false"]
        if getuid() == 0 { lines.append("user root") }
        let config = directory.appendingPathComponent("mosquitto.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.executable)
        p.arguments = ["-c", config.path]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        try waitUntilListening(port: port, what: "mosquitto")
    }

    func stop() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        process = nil
    }
}

struct TestSetupError: Error, CustomStringConvertible { let description: String }

/// A port the kernel just handed out on 127.0.0.1 (bound, then released).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError(description: "socket: errno \(errno)") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard bound else { throw TestSetupError(description: "bind: errno \(errno)") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Waits (bounded, 5 s) until something accepts TCP connections on the loopback port.
func waitUntilListening(port: Int, what: String) throws {
    for _ in 0..<500 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        let ok = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(fd)
        if ok { return }
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
