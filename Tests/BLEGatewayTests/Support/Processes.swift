import Foundation

/// The `blegateway` executable built beside this test bundle.
enum BuiltProducts {
    static var blegateway: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var dir = bundle
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("blegateway").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return bundle.appendingPathComponent("blegateway").path
    }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// A child process with its output in a log file; killed when dropped.
final class Child: @unchecked Sendable {
    let process = Process()
    let log: String

    init(_ executable: String, _ arguments: [String], log: String) throws {
        self.log = log
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let h = FileHandle(forWritingAtPath: log)!
        h.seekToEndOfFile()
        process.standardOutput = h
        process.standardError = h
        try process.run()
    }

    /// A child whose signal mask is cleared before it becomes `executable`, through perl (Essential in Debian): a
    /// child inherits the test thread's mask, which blocks SIGTERM and SIGHUP, so a stop would wait its full limit
    /// and a broker would never reload its configuration (an ACL fixed in a test stayed unfixed).
    static func unmasked(_ executable: String, _ arguments: [String], log: String) throws -> Child {
        let unblock = "use POSIX; sigprocmask(SIG_SETMASK, POSIX::SigSet->new); exec @ARGV or die"
        return try Child("/usr/bin/perl", ["-e", unblock, "--", executable] + arguments, log: log)
    }

    var isRunning: Bool { process.isRunning }

    /// The child is gone or a zombie (exited, not yet reaped).
    var exited: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
    var pid: Int32 { process.processIdentifier }

    func signal(_ s: Int32) { if process.isRunning { kill(process.processIdentifier, s) } }

    /// Sends `s` and waits up to `limit` for the exit; SIGKILL after that. Returns whether it exited in time.
    @discardableResult
    func stop(_ s: Int32 = SIGKILL, limit: Duration = .seconds(10)) -> Bool {
        guard process.isRunning else { return true }
        kill(process.processIdentifier, s)
        let deadline = ContinuousClock.now + limit
        // Whether the child has exited, from the kernel (/proc: gone or a zombie), not from Foundation's view, which
        // learns of the exit only when its own machinery runs: a starved process could SIGKILL a broker that was
        // still saving its persistence file on SIGTERM (and lose what it had not saved).
        while !exited && ContinuousClock.now < deadline { usleep(10_000) }
        if !exited {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return false
        }
        return true
    }

    deinit { if process.isRunning && !exited { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
}

/// A real mosquitto for end-to-end tests: persistence on, so a graceful restart keeps persistent sessions
/// and the messages queued for them, as a production broker does.
final class PersistentBroker: @unchecked Sendable {
    static let executable = "/usr/sbin/mosquitto"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    let directory: URL
    let port: Int
    private var child: Child?

    init(directory: URL) throws {
        self.directory = directory
        port = try Self.freePort()
        // Run as root, mosquitto drops to the `mosquitto` user, which cannot write its persistence file into a
        // root-owned temporary directory ("Error saving in-memory database … Permission denied"): messages queued for
        // a persistent session were then lost at a broker restart, a gap the zero-loss test blamed on the gateway.
        let user = getuid() == 0 ? "user root" : ""
        let conf = """
            \(user)
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence true
            persistence_location \(directory.path)/
            autosave_interval 1
            max_queued_messages 0
            """
        try conf.write(to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    var url: String { "mqtt://127.0.0.1:\(port)" }

    func start() throws {
        // Unmasked: with SIGTERM blocked, `stop()` waited its full 30 s and then killed a broker that never saved
        // its state.
        child = try Child.unmasked(Self.executable, ["-c", directory.appendingPathComponent("mosquitto.conf").path],
                                   log: directory.appendingPathComponent("mosquitto.log").path)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if Self.accepts(port) { return }
            usleep(20_000)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// SIGTERM: the broker saves its state and exits, like `systemctl restart mosquitto` (which waits 90 s).
    func stop() { child?.stop(SIGTERM, limit: .seconds(30)) }

    /// A throw-away mosquitto for one test (no persistence): anonymous clients on a free port of 127.0.0.1, with
    /// `lines` after the listener (an ACL, TLS files …), its configuration and log in `directory`, the signal mask
    /// cleared (so SIGHUP reloads reach it). Returns once it accepts connections.
    static func plain(in directory: URL, _ lines: [String] = []) throws -> (child: Child, port: Int) {
        let port = try freePort()
        let conf = directory.appendingPathComponent("mosquitto.conf")
        try ([getuid() == 0 ? "user root" : "", "listener \(port) 127.0.0.1", "allow_anonymous true"] + lines)
            .joined(separator: "\n").appending("\n").write(to: conf, atomically: true, encoding: .utf8)
        let child = try Child.unmasked(executable, ["-c", conf.path],
                                       log: directory.appendingPathComponent("mosquitto.log").path)
        let deadline = ContinuousClock.now + .seconds(10)
        while !accepts(port) {
            guard ContinuousClock.now < deadline else {
                child.stop()
                throw POSIXError(.ETIMEDOUT)
            }
            usleep(20_000)
        }
        return (child, port)
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: a.sin_port))
    }
}

/// Checks published payloads against schema/v1 with Tests/tools/validate_payloads.py, under the pinned venv
/// `make test-venv` builds (Tests/tools/requirements.txt), or Debian's python3-jsonschema when it is not built.
enum SchemaValidation {
    static let venvPython = "/var/cache/blegateway-venv/bin/python3"

    static var python: String {
        FileManager.default.isExecutableFile(atPath: venvPython) ? venvPython : "/usr/bin/python3"
    }

    /// Writes `(topic, payload)` pairs as JSON lines under `directory` and validates them for `prefix`.
    /// Returns nil when every payload matches its topic's schema, else the validator's report.
    static func problems(_ published: [(topic: String, json: [String: Any])], prefix: String, directory: URL,
                         name: String = "published.jsonl") throws -> String? {
        let texts = try published.map { topic, json in
            (topic: topic, payload: String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self))
        }
        return try problems(texts, prefix: prefix, directory: directory, name: name)
    }

    /// The same for payloads as received, text unchanged (a payload that is not JSON is reported, not dropped).
    static func problems(_ published: [(topic: String, payload: String)], prefix: String, directory: URL,
                         name: String = "published.jsonl", python: String = python,
                         operatorTopics: Bool = false) throws -> String? {
        let record = directory.appendingPathComponent(name)
        let lines = try published.map { topic, payload in
            String(decoding: try JSONSerialization.data(withJSONObject: ["topic": topic, "payload": payload]),
                   as: UTF8.self)
        }
        try (lines.joined(separator: "\n") + "\n").write(to: record, atomically: true, encoding: .utf8)
        let validator = Process()
        validator.executableURL = URL(fileURLWithPath: python)
        let script = BuiltProducts.repositoryRoot.appendingPathComponent("Tests/tools/validate_payloads.py")
        validator.arguments = [script.path] + (operatorTopics ? ["--operator"] : []) + [prefix, record.path]
        let out = Pipe()
        validator.standardOutput = out
        validator.standardError = FileHandle.nullDevice
        try validator.run()
        let report = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        validator.waitUntilExit()
        return validator.terminationStatus == 0 ? nil : String(report.suffix(2000))
    }
}
