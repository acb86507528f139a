import ArgumentParser
import BLEConfiguration
import BLEDomain
import BLEGateway
import BLEHCI
import BLETransport
import Foundation
import Logging

/// `blegateway explain ADDRESS`: why a device is, or is not, published. `hci-dump` shows what arrives; this shows
/// each report from one address and what the filters, decoders and rate limits of the configuration do with it
/// (SightingExplainer). It opens the adapter as `run` does, so in exclusive mode stop the gateway first — or use
/// `run --trace ADDRESS`, which logs the same lines from the running gateway.
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show each report from one device and what the gateway's configuration does with it.")

    @Argument(help: "The device's address, AA:BB:CC:DD:EE:FF.")
    var address: String

    @Option(help: "The configuration file (as for run); without it, the defaults.")
    var config: String?

    @Option(help: "Override adapter.device: hci0, unix:PATH, tcp:HOST:PORT, serial:/dev/ttyX[@BAUD][,rtscts], file:X.")
    var device: String?

    @Option(help: "Override adapter.mode: exclusive or shared.")
    var mode: AdapterMode?

    @Option(help: "Stop after this many seconds.")
    var duration: Double = 30

    func run() async throws {
        guard let target = BDAddress(address) else {
            throw ValidationError("\(address): expected an address like AA:BB:CC:DD:EE:FF")
        }
        var c = GatewayConfiguration()
        if let config {
            do {
                c = try ConfigurationLoader.load(path: config).configuration
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        if let device { c.adapter.device = device }
        if let mode { c.adapter.mode = mode }
        var logger = Logger(label: "blegateway.explain")
        logger.logLevel = .warning
        // The explainer and what was heard (the target's reports, the other addresses), under one lock.
        let explained = Locked(
            (explainer: try SightingExplainer(configuration: c), target: 0, others: Set<BDAddress>()))
        // A line at a time, written at once: nothing is lost when the command is stopped.
        @Sendable func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
        say(
            "explain \(target) on \(c.adapter.device) for \(duration) s"
                + (config.map { " with \($0)" } ?? " with the defaults") + " (remote configuration layers not included)"
        )
        let source = try makeSightingSource(c, capture: nil, clock: SystemClock(), logger: logger)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await source.run(
                    adapter: { report in
                        say("adapter \(report.device): \(report.state)\(report.reason.map { " (\($0))" } ?? "")")
                    },
                    sighting: { s in
                        guard s.address == target else {
                            explained.withLock { _ = $0.others.insert(s.address) }
                            return
                        }
                        explained.withLock { $0.target += 1 }
                        let at = (ContinuousClock.now - start).seconds
                        let steps = explained.withLock { $0.explainer.explain(s, at: at) }
                        let lines = steps.map(\.description).joined(separator: "\n            ")
                        say(String(format: "%8.3f s", at) + "  " + lines)
                    })
            }
            group.addTask { try await Task.sleep(for: .seconds(duration)) }
            _ = try await group.next()
            group.cancelAll()
        }
        let (heard, others) = explained.withLock { ($0.target, $0.others.count) }
        if heard == 0 {
            say(
                "no report from \(target) in \(duration) s (\(others) other devices heard): it is not advertising, "
                    + "out of range, or advertising under another (private) address — identity_keys resolve those")
        } else {
            say("\(heard) reports from \(target); \(others) other devices heard")
        }
    }
}
