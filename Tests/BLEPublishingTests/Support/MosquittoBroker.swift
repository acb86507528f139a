import BLETestSupport
import Foundation

/// A real `/usr/sbin/mosquitto` on a free loopback port, with a config written to its own temporary directory.
/// `start()` returns once the port accepts connections; `kill()` ends it abruptly (SIGKILL), as does deinit.
/// Used by the tests and the benchmark; never a fixed port, so parallel tests and engineers do not collide.
final class MosquittoBroker: @unchecked Sendable {
    struct TLSListener {
        var caFile: String
        var certificateFile: String
        var keyFile: String
        var requireClientCertificate = false
    }

    static let executable = "/usr/sbin/mosquitto"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    let directory: URL
    private(set) var port: Int = 0
    private var process: Process?
    /// Extra lines for mosquitto.conf, e.g. `password_file …`.
    var extraConfiguration: [String] = []
    var allowAnonymous = true
    var tls: TLSListener?

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mosquitto-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        // SIGKILL, not SIGTERM: a child spawned from a test thread may inherit a signal mask that blocks SIGTERM.
        if let process, process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    var logPath: String { directory.appendingPathComponent("mosquitto.log").path }

    /// Starts the broker (on the same port as before when restarting) and waits until it listens.
    func start() throws {
        let restarting = port != 0
        var lastError: (any Error)?
        for _ in 0..<5 {
            if !restarting { port = try Self.freePort() }
            do {
                try launch()
                return
            } catch {
                // Another process took the free port between our probe and mosquitto's bind: try again.
                lastError = error
                process = nil
            }
        }
        throw lastError!
    }

    private func launch() throws {
        var lines = ["listener \(port) 127.0.0.1", "allow_anonymous \(allowAnonymous)", "persistence false",
                     "log_dest file \(logPath)", "log_type all"]
        // Started as root, mosquitto drops to user "mosquitto", which cannot write the log in our directory.
        if getuid() == 0 { lines.append("user root") }
        if let tls {
            lines += ["cafile \(tls.caFile)", "certfile \(tls.certificateFile)", "keyfile \(tls.keyFile)",
                      "require_certificate \(tls.requireClientCertificate)"]
        }
        lines += extraConfiguration
        let config = directory.appendingPathComponent("mosquitto.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let process = Process()
        // Through perl (Essential in Debian), which clears the signal mask before it becomes mosquitto: a child
        // inherits the test thread's mask, which may block SIGHUP, and `reload()` must reach the broker.
        let unblock = "use POSIX; sigprocmask(SIG_SETMASK, POSIX::SigSet->new); exec @ARGV or die"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/perl")
        process.arguments = ["-e", unblock, "--", Self.executable, "-c", config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // Wait until it accepts TCP connections (bounded; a broker that never listens fails the test).
        for _ in 0..<500 {
            if Self.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(10_000)
        }
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw BrokerError(message: "mosquitto did not listen on port \(port): \(log.suffix(500))")
    }

    /// SIGKILL: no goodbye to clients, like a crashed broker or a pulled cable.
    func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGHUP: the broker reloads its configuration, ACL and password files included (an operator's reload).
    func reload() { if let process { Foundation.kill(process.processIdentifier, SIGHUP) } }

    /// SIGSTOP / SIGCONT: the broker stops answering but keeps its sockets open, so publishes stay unacknowledged.
    func pause() { if let process { Foundation.kill(process.processIdentifier, SIGSTOP) } }
    func resume() { if let process { Foundation.kill(process.processIdentifier, SIGCONT) } }


    /// Adds `user` with `password` to a password file (`mosquitto_passwd -b`) and requires authentication.
    func requirePassword(user: String, password: String) throws {
        let file = directory.appendingPathComponent("passwd").path
        try ToolRun.succeeding("/usr/bin/mosquitto_passwd", ["-c", "-b", file, user, password])
        extraConfiguration.append("password_file \(file)")
        allowAnonymous = false
    }

    /// Writes `contents` to a file in the broker's directory and returns its path.
    func writeFile(_ name: String, _ contents: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try contents.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BrokerError(message: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw BrokerError(message: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

struct BrokerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
