import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real mosquitto (`/usr/sbin/mosquitto`) on a free port of 127.0.0.1, its configuration and log in its own
/// directory: the one broker harness of the tests and the benchmarks. Never a fixed port, so parallel runs and
/// engineers do not collide; the port is kept across restarts, so clients reconnect to the same broker.
///
/// `start()` returns when the broker says it is running (its log, read from a pipe, not a connect loop); `kill()`
/// ends it abruptly (SIGKILL: a crash or a pulled cable), `terminate()` as an operator does (SIGTERM: a persistent
/// broker saves its state first), and deinit kills what is left.
public final class Mosquitto: @unchecked Sendable {
    public struct TLSListener: Sendable {
        public var caFile: String
        public var certificateFile: String
        public var keyFile: String
        public var requireClientCertificate: Bool

        public init(caFile: String, certificateFile: String, keyFile: String, requireClientCertificate: Bool = false) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.requireClientCertificate = requireClientCertificate
        }
    }

    public static let executable = "/usr/sbin/mosquitto"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    public let directory: URL
    public private(set) var port: Int
    /// Persistent sessions and their queued messages survive a `terminate()` and `start()` (a production broker's
    /// setting); without it a restart forgets them.
    public var persistence: Bool
    public var allowAnonymous = true
    public var tls: TLSListener?
    /// Lines after the listener in mosquitto.conf (an ACL file, a password file …).
    public var extraConfiguration: [String]
    /// Every message in the log (`log_type all`), for a test to show what the broker saw; a benchmark turns it off.
    public var verbose = true

    private let ownsDirectory: Bool
    private var process: Process?
    private var exited: DispatchSemaphore?
    private var hasRun = false

    /// A broker whose files live in `directory` (kept), or in a new temporary one (removed at deinit).
    public init(directory: URL? = nil, persistence: Bool = false, configuration: [String] = []) throws {
        if let directory {
            self.directory = directory
            ownsDirectory = false
        } else {
            self.directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("mosquitto-\(getpid())-\(UUID().uuidString.prefix(8))")
            ownsDirectory = true
        }
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        self.persistence = persistence
        extraConfiguration = configuration
        port = try Loopback.freePort()
    }

    deinit {
        kill()
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    public var url: String { "mqtt://127.0.0.1:\(port)" }
    public var logPath: String { directory.appendingPathComponent("mosquitto.log").path }
    public var isRunning: Bool { process?.isRunning ?? false }
    public var pid: Int32? { process?.processIdentifier }

    /// Starts the broker and returns once it runs. The first start takes another free port if something took this
    /// one between the probe and mosquitto's bind; a restart keeps its port.
    public func start() throws {
        var attempts = hasRun ? 1 : 5
        while true {
            do {
                try launch()
                hasRun = true
                return
            } catch {
                attempts -= 1
                guard attempts > 0 else { throw error }
                port = try Loopback.freePort()
            }
        }
    }

    /// SIGKILL: no goodbye to clients and nothing saved, like a crashed broker.
    public func kill() {
        guard let process else { return }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        exited?.wait()
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGTERM, as `systemctl stop` sends it: the broker saves its state and exits. SIGKILL after `limit`. Returns
    /// whether it exited in time.
    @discardableResult
    public func terminate(limit: Duration = .seconds(30)) -> Bool {
        guard let process, let exited else { return true }
        Glibc.kill(process.processIdentifier, SIGTERM)
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) * 1e-18
        let inTime = exited.wait(timeout: .now() + seconds) == .success
        if !inTime { Glibc.kill(process.processIdentifier, SIGKILL) } else { exited.signal() }
        kill()
        return inTime
    }

    /// SIGHUP: the broker reloads its configuration, ACL and password files included (an operator's reload).
    public func reload() { signal(SIGHUP) }

    /// SIGSTOP / SIGCONT: the broker stops answering but keeps its sockets open, so publishes stay unacknowledged.
    public func pause() { signal(SIGSTOP) }
    public func resume() { signal(SIGCONT) }

    public func signal(_ s: Int32) { if let process, process.isRunning { Glibc.kill(process.processIdentifier, s) } }

    /// Adds `user` with `password` to a password file (`mosquitto_passwd -b`) and requires authentication.
    public func requirePassword(user: String, password: String) throws {
        let file = directory.appendingPathComponent("passwd").path
        try ToolRun.succeeding("/usr/bin/mosquitto_passwd", ["-c", "-b", file, user, password])
        extraConfiguration.append("password_file \(file)")
        allowAnonymous = false
    }

    /// Writes `contents` to a file in the broker's directory and returns its path.
    public func writeFile(_ name: String, _ contents: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try contents.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    private func launch() throws {
        // stderr: unbuffered, so "running" arrives when it is said.
        var lines = ["listener \(port) 127.0.0.1", "allow_anonymous \(allowAnonymous)", "log_dest stderr"]
        lines +=
            verbose
            ? ["log_type all"] : ["log_type error", "log_type warning", "log_type notice", "log_type information"]
        if persistence {
            // A queue no test fills: a test that counts every message must not lose one to mosquitto's default of
            // 1000 queued per client. Not 0 ("no limit"): mosquitto 2.0.11 compares a client's queue against it after
            // a denied PUBLISH and, 0 >= 0, closes the connection (Quota exceeded) after the PUBACK 0x87.
            lines += [
                "persistence true", "persistence_location \(directory.path)/", "autosave_interval 1",
                "max_queued_messages 10000000",
            ]
        } else {
            lines.append("persistence false")
        }
        // Started as root, mosquitto drops to the `mosquitto` user, which can neither write its persistence file nor
        // read the files in a root-owned temporary directory ("Error saving in-memory database … Permission
        // denied": a zero-loss test once blamed the gateway for the messages a restart lost so).
        if getuid() == 0 { lines.append("user root") }
        if let tls {
            lines += [
                "cafile \(tls.caFile)", "certfile \(tls.certificateFile)", "keyfile \(tls.keyFile)",
                "require_certificate \(tls.requireClientCertificate)",
            ]
        }
        lines += extraConfiguration
        let config = directory.appendingPathComponent("mosquitto.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let launched = try ServerLaunch.start(Self.executable, ["-c", config.path], logPath: logPath)
        let (process, log) = (launched.process, launched.log)

        // One reader owns the pipe for the broker's whole life: it copies the log to the file, says when the broker
        // runs, and says when the pipe ends, which is when the broker has exited.
        let running = DispatchSemaphore(value: 0)
        let exited = DispatchSemaphore(value: 0)
        let ran = Flag()
        let reader = launched.output
        Thread.detachNewThread {
            var seen: [UInt8] = []
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                log.write(chunk)
                if !ran.value {
                    seen += chunk
                    if String(decoding: seen, as: UTF8.self).contains(" running\n") {
                        seen = []
                        ran.value = true  // before the signal, which publishes it
                        running.signal()
                    }
                }
            }
            try? log.close()
            if !ran.value { running.signal() }
            exited.signal()
        }
        self.process = process
        self.exited = exited
        // Bounded: a broker that neither runs nor exits in 10 s fails the test instead of hanging it.
        let said = running.wait(timeout: .now() + 10)
        guard said == .success, ran.value else {
            // The pipe ended before the broker ran: it exited (a taken port, a bad configuration).
            kill()
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw ToolFailure(message: "mosquitto did not start on port \(port): \(text.suffix(600))")
        }
    }

    /// Written by the log reader before it signals, read after the wait.
    private final class Flag: @unchecked Sendable { var value = false }
}
