import ArgumentParser
import BLEConfiguration
import BLEGateway
import BLEHCI
import BLETransport
import Foundation
import Logging
import ServiceLifecycle

/// `blegateway run`: the gateway. The file gives everything; flags override the essentials.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the gateway: scan → decode → spool → MQTT.")

    @Option(help: "The configuration file (YAML; see config/gateway.yaml and docs/CONFIG.md).")
    var config: String?

    @Option(help: "Override gateway.id.")
    var gatewayId: String?

    @Option(help: "Override adapter.device: hci0, unix:PATH, tcp:HOST:PORT, serial:/dev/ttyX[@BAUD], file:PATH.")
    var device: String?

    @Option(help: "Override adapter.mode: exclusive or shared.")
    var mode: AdapterMode?

    @Option(help: "Override mqtt.broker: mqtt://HOST:PORT or mqtts://HOST:PORT.")
    var broker: String?

    @Option(help: "Override mqtt.prefix.")
    var prefix: String?

    @Option(help: "Override spool.path (a file, or a directory to hold spool.sqlite).")
    var spool: String?

    @OptionGroup var capture: CaptureArguments

    @Option(help: "Follow a simulator's virtual clock: the clock.json its --socket-dir holds.")
    var simClock: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Log every report from this address and what the filters, decoders and rate limits do with it.")
    var trace: String?

    func run() async throws {
        var c = GatewayConfiguration()
        if let config {
            do {
                let loaded = try ConfigurationLoader.load(path: config)
                c = loaded.configuration
                for w in loaded.warnings { FileHandle.standardError.write(Data("\(config): warning: \(w)\n".utf8)) }
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        if let gatewayId { c.gateway.id = gatewayId }
        if let device { c.adapter.device = device }
        if let mode { c.adapter.mode = mode }
        if let broker { c.mqtt.broker = broker }
        if let prefix { c.mqtt.prefix = prefix }
        if let spool { c.spool.path = spool }  // a directory holds spool.sqlite, as for spool.path (preflight)
        do {
            try ConfigurationLoader.validate(c)
            c = try ConfigurationPreflight.check(c)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }

        let level = Logger.Level(rawValue: logLevel) ?? .info
        CommandLogging.bootstrap(level: level)
        let logger = Logger(label: "blegateway")

        var clock: any BLEClock = SystemClock()
        var synchronized: @Sendable () -> Bool = { SystemFacts.clockIsSynchronized() }
        if let simClock {
            clock = try SimulatorClockFile.load(path: simClock)
            synchronized = { true }  // virtual time is the simulator's truth
        }
        let runtime = try GatewayRuntime(
            configuration: c,
            makeSource: { role in try makeSightingSource(c, capture: capture, clock: clock, logger: logger, role: role)
            },
            clock: clock, logger: logger, clockSynchronized: synchronized)
        if let trace {
            guard let address = BDAddress(trace) else {
                throw ValidationError("--trace \(trace): expected an address like AA:BB:CC:DD:EE:FF")
            }
            runtime.trace(address)
        }
        logger.info(
            "gateway \(c.gateway.id): \(c.adapter.device) (\(c.adapter.mode.rawValue)) → \(c.mqtt.brokers.joined(separator: ", ")) under \(c.mqtt.prefix)/"
        )
        let group = ServiceGroup(
            configuration: .init(
                // The runtime returns by itself only at the end of a replayed capture: a normal end, not a failure.
                services: [.init(service: runtime, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}

/// The simulator's DIR/clock.json: {"real_origin_unix": …, "factor": … | null}.
enum SimulatorClockFile {
    static func load(path: String) throws -> any BLEClock {
        guard let data = FileManager.default.contents(atPath: path),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let origin = json["real_origin_unix"] as? Double
        else { throw ValidationError("\(path): not a simulator clock file") }
        guard let factor = json["factor"] as? Double else {
            throw ValidationError(
                "\(path): the simulator runs unpaced (--speed max); a gateway can only follow a paced clock")
        }
        return ScaledClock(factor: factor, realOrigin: origin)
    }
}
