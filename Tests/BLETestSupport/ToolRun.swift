import Foundation

/// A command run to its end by a test: its exit status and what it wrote to stdout and stderr, together. The one
/// way tests run a tool to completion (openssl, mosquitto_pub, the blegateway CLI); long-lived children are `Child`.
public struct ToolRun: Sendable {
    public var status: Int32
    public var output: String

    /// Runs `executable` with `arguments`, in `directory` when given, and waits for it to exit.
    public static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> ToolRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read to the end before waiting: a tool that fills the pipe would otherwise never exit.
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ToolRun(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// The same, for a step that must succeed: throws `ToolFailure` (the command and its output) unless it exits 0;
    /// returns its output.
    @discardableResult
    public static func succeeding(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws
        -> String
    {
        let r = try run(executable, arguments, in: directory)
        guard r.status == 0 else {
            throw ToolFailure(
                message: "\(executable) \(arguments.joined(separator: " ")) exited \(r.status): \(r.output)")
        }
        return r.output
    }
}

public struct ToolFailure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
