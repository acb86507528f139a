import ArgumentParser
import BLESimulator
import Foundation

/// `blegateway sim`: runs a scenario's virtual radio, one H4 controller socket per gateway.
struct SimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run a virtual radio: one simulated HCI controller per gateway of a scenario.",
        discussion: """
            Each gateway of the scenario gets an H4 byte-stream socket at DIR/<gateway-id>.sock; run a \
            gateway with --device unix:DIR/<gateway-id>.sock. DIR/clock.json describes the virtual clock and \
            DIR/gateway-config.yaml holds the scenario's gateway_config section. See docs/SIMULATOR.md.
            """)

    @Option(help: "Scenario YAML file (config/scenarios/*.yaml).")
    var scenario: String

    @Option(name: .customLong("socket-dir"), help: "Directory for the controller sockets and clock.json.")
    var socketDir: String

    @Option(help: "Virtual seconds per real second (1 = real time, 60 = an hour a minute), or 'max' for no pacing.")
    var speed: String = "1"

    @Option(help: "Write the ground truth (positions, distances, faults) as JSON lines to this file.")
    var truth: String?

    @Option(help: "Seed for every random draw; the same seed gives the same air.")
    var seed: UInt64 = 1

    @Option(help: "Virtual seconds to run (default: the scenario's duration_s, else until interrupted).")
    var duration: Double?

    @Option(help: "Seconds of real time between status lines on stderr (0: none).")
    var statusEvery: Double = 10

    func validate() throws {
        guard speed == "max" || (Double(speed).map { $0 > 0 && $0.isFinite } ?? false) else {
            throw ValidationError("--speed must be a positive number or 'max', not '\(speed)'")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
    }

    func run() async throws {
        let loaded: Scenario
        do {
            loaded = try ScenarioLoader.load(path: scenario)
        } catch let e as ScenarioError {
            FileHandle.standardError.write(Data("blegateway sim: \(e)\n".utf8))
            throw ExitCode(2)
        }
        var options = SimulatorOptions(socketDirectory: socketDir)
        options.speed = speed == "max" ? .max : .factor(Double(speed)!)
        options.seed = seed
        options.truthPath = truth
        options.duration = duration
        let sim = try Simulator(scenario: loaded, options: options)
        for node in sim.nodes {
            say("sim: \(node.spec.id) \(node.spec.address) on unix:\(sim.socketPath(for: node.spec.id))")
        }
        say("sim: \(loaded.emitters.count) advertisers, speed \(speed), seed \(seed)")

        let status = Task {
            guard statusEvery > 0 else { return }
            while !Task.isCancelled {
                try await Task.sleep(nanoseconds: UInt64(statusEvery * 1e9))
                let t = sim.clock.now().seconds
                for n in sim.nodes {
                    let s = n.stats
                    FileHandle.standardError.write(
                        Data(
                            ("sim: t=\(Int(t))s \(n.spec.id) connected=\(n.isConnected) commands=\(s.commands) "
                                + "unknown=\(s.unknownCommands) reports=\(s.reportsSent) dropped=\(s.reportsDroppedHostSlow) "
                                + "masked=\(s.reportsMasked) malformed_bytes=\(s.malformedBytes) "
                                + "no_credit=\(s.commandsWithoutCredit)\n").utf8))
                }
            }
        }
        defer { status.cancel() }
        // SIGINT/SIGTERM end the run cleanly (sockets removed, truth flushed).
        if try await cancellingOnSignals({ try await sim.run() }) { say("sim: stopped") }
    }
}

/// Writes a line to stdout unbuffered, so it reaches a log file (the demo's) at once.
private func say(_ line: String) {
    StandardOutput.write(line + "\n")
}
