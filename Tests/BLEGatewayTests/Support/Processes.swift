import BLETestSupport
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
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
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
            let close = stat.lastIndex(of: ")")
        else { return true }
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

    deinit {
        if process.isRunning && !exited {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
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
    static func problems(
        _ published: [(topic: String, json: [String: Any])], prefix: String, directory: URL,
        name: String = "published.jsonl"
    ) throws -> String? {
        let texts = try published.map { topic, json in
            (topic: topic, payload: String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self))
        }
        return try problems(texts, prefix: prefix, directory: directory, name: name)
    }

    /// The same for payloads as received, text unchanged (a payload that is not JSON is reported, not dropped).
    static func problems(
        _ published: [(topic: String, payload: String)], prefix: String, directory: URL,
        name: String = "published.jsonl", python: String = python,
        operatorTopics: Bool = false
    ) throws -> String? {
        let record = directory.appendingPathComponent(name)
        let lines = try published.map { topic, payload in
            String(
                decoding: try JSONSerialization.data(withJSONObject: ["topic": topic, "payload": payload]),
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

/// A TCP relay on loopback (socat) that a test can stall and resume: the network between a gateway and its broker
/// failing without either end closing anything, as a cut cable or a dead switch does.
final class Relay: @unchecked Sendable {
    let child: Child
    let port: Int

    init(to target: Int, log: String) throws {
        port = try Loopback.freePort()
        child = try Child(
            "/usr/bin/socat", ["TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork", "TCP:127.0.0.1:\(target)"],
            log: log)
    }

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/socat") }

    /// Stops forwarding: socat relays each connection in a child it forks, so the listener and every child are
    /// stopped (stopping the listener alone leaves the connections flowing).
    func stall() { signal(SIGSTOP) }
    func resume() { signal(SIGCONT) }
    func stop() { child.stop(SIGKILL) }

    private func signal(_ s: Int32) {
        let children =
            (try? String(contentsOfFile: "/proc/\(child.pid)/task/\(child.pid)/children", encoding: .utf8)) ?? ""
        for pid in children.split(separator: " ").compactMap({ Int32($0) }) { kill(pid, s) }
        kill(child.pid, s)
    }
}
