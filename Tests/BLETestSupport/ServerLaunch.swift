import Foundation

/// A long-lived server a test starts (mosquitto, a NATS node), launched the one way: its stdout and stderr into one
/// pipe, and the log file the caller's reader copies that pipe to opened for appending (a restart adds to it).
public struct ServerLaunch {
    public let process: Process
    /// The log file, positioned at its end.
    public let log: FileHandle
    /// The pipe's reading end: the server's output until it exits.
    public let output: FileHandle

    /// Starts `executable` with `arguments` through perl (Essential in Debian), which clears the signal mask before
    /// it becomes the server: a child inherits the test thread's mask, which may block SIGTERM and SIGHUP, so a stop
    /// would wait its full limit and a reload would never reach it.
    public static func start(_ executable: String, _ arguments: [String], logPath: String) throws -> ServerLaunch {
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw ToolFailure(message: "cannot write \(logPath)")
        }
        log.seekToEndOfFile()
        let process = Process()
        let unblock = "use POSIX; sigprocmask(SIG_SETMASK, POSIX::SigSet->new); exec @ARGV or die"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/perl")
        process.arguments = ["-e", unblock, "--", executable] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        output.fileHandleForWriting.closeFile()
        return ServerLaunch(process: process, log: log, output: output.fileHandleForReading)
    }
}
