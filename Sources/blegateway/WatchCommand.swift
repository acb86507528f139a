import ArgumentParser
import BLEFleet
import BLEGateway
import BLEPublishing
import BLETransport
import Foundation

/// `blegateway watch`: subscribes to `<prefix>/#` and shows the fleet as it arrives (the demo's live view).
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show live what the gateways publish: status, adapters, beacons, peripherals, regions.")

    @OptionGroup var connection: ToolBrokerOptions

    @Option(help: "The topic prefix the gateways publish under.")
    var prefix: String = "blegateway"

    @Option(help: "Also append every message to this file as a JSON line {\"topic\",\"payload\",\"retained\"}.")
    var record: String?

    @Option(help: "Stop after this many seconds (default: until interrupted).")
    var duration: Double?

    @Flag(help: "Print a snapshot every second instead of redrawing the screen (the default when not on a terminal).")
    var plain = false

    func run() async throws {
        let configuration = try connection.configuration(role: "watch")
        let client = MQTTClient(configuration: configuration)
        let messages = try client.subscribe("\(prefix)/#", qos: .atLeastOnce)
        let recorder = try record.map { path -> FileHandle in
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            guard let h = FileHandle(forWritingAtPath: path) else {
                throw ValidationError("cannot write \(path)")
            }
            return h
        }
        let redraw = !plain && isatty(STDOUT_FILENO) == 1
        // The dashboard's model (same gap counting: only holes inside one run's live stream), shared between the
        // subscription and the redraw loop.
        // Each recorded line is written as it comes (unbuffered); a signal ends the watch the way --duration does,
        // and the summary's count (`recorded`) is what the file holds.
        let view = Locked((model: FleetModel(prefix: prefix), recorded: 0))
        let signalled = try await cancellingOnSignals { [duration] in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                group.addTask {
                    for await m in messages {
                        let now = Date().timeIntervalSince1970
                        view.withLock {
                            _ = $0.model.receive(topic: m.topic, payload: m.payload, retained: m.retain, now: now)
                        }
                        if let recorder {
                            var line: [String: Any] = ["topic": m.topic, "retained": m.retain]
                            line["payload"] = String(decoding: m.payload, as: UTF8.self)
                            if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
                                recorder.write(data + Data("\n".utf8))
                                view.withLock { $0.recorded += 1 }
                            }
                        }
                    }
                }
                group.addTask {
                    let start = ContinuousClock.now
                    while !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(redraw ? 500 : 1000))
                        let now = Date().timeIntervalSince1970
                        let (rows, columns) = redraw ? Self.terminalSize() : (60, 200)
                        // One line less than the screen: the cursor's line after the last row would scroll the first off.
                        let lines = view.withLock {
                            FleetText.render($0.model, rows: rows - 1, columns: columns, now: now)
                        }
                        // Written in one piece, unbuffered, so a redraw never tears.
                        let text =
                            (redraw ? "\u{1B}[H\u{1B}[2J" : "") + lines.joined(separator: "\n") + "\n"
                            + (redraw ? "" : "\n")
                        StandardOutput.write(text)
                        if let duration, ContinuousClock.now - start >= .seconds(duration) { return }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
        try recorder?.close()
        if let record {
            FileHandle.standardError.write(
                Data(
                    "watch: \(view.withLock { $0.recorded }) messages recorded in \(record)\(signalled ? ", stopped by signal" : "")\n"
                        .utf8))
        }
    }
}

extension WatchCommand {
    static func terminalSize() -> (rows: Int, columns: Int) { StandardOutput.terminalSize() }
}
