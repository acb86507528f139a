import ArgumentParser
import BLEFleet
import BLEGateway
import Foundation
import Logging
import ServiceLifecycle

/// `blegateway fleet`: the fleet service (docs/FLEET.md): a live dashboard, plots and `/metrics` for every gateway
/// publishing under one prefix, read from the broker alone.
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Serve the fleet's live web dashboard and Prometheus metrics, read from the broker.")

    @Option(help: "A YAML file with a `fleet:` section (its `mqtt:` broker and prefix apply too).")
    var config: String?

    @OptionGroup var connection: ToolBrokerOptions

    @Option(
        help: "The topic prefix the gateways publish under (default blegateway). Repeat it to follow several sites.")
    var prefix: [String] = []

    @Option(help: "Where the dashboard listens: HOST:PORT (default 127.0.0.1:8080; port 0 picks a free one).")
    var listen: String?

    @Option(help: "SQLite file for the plots' history (default: none; plots then start empty at each start).")
    var history: String?

    @Option(help: "The site description for room presence (YAML: floors, rooms, gateway positions; docs/PRESENCE.md).")
    var site: String?

    @Option(
        help:
            "This instance's name on the site's lease (default: the host's name); two instances for one site need two.")
    var instance: String?

    @Option(help: "Announce tracked tags to Home Assistant as device trackers under this discovery prefix.")
    var homeassistantDiscoveryPrefix: String?

    func run() async throws {
        var file = FleetSettingsFile()
        if let config {
            let text = try String(contentsOfFile: config, encoding: .utf8)
            do {
                file = try FleetSettingsFile(yaml: text, file: config)
            } catch {
                throw ValidationError("\(config): \(error)")
            }
        }
        let brokerURL = connection.url(file: file.broker)
        let sites = !prefix.isEmpty ? prefix : file.sites ?? [file.prefix ?? "blegateway"]
        if let problem = FleetConfiguration.problem(sites: sites) { throw ValidationError("--prefix: \(problem)") }
        let (host, port) = try FleetSettingsFile.parseListen(listen ?? file.listen ?? "127.0.0.1:8080")
        let mqtt = try connection.configuration(
            role: "fleet", fileBroker: file.broker, usernameFile: file.usernameFile, passwordFile: file.passwordFile,
            fileProtocol: file.protocolVersion)
        var c = FleetConfiguration(mqtt: mqtt, brokerURL: brokerURL, sites: sites)
        c.listenHost = host
        c.listenPort = port
        c.historyPath = history ?? file.history
        if let r = file.historyRetentionS { c.historyRetentionS = r }
        if let t = file.beaconTimeoutS { c.beaconTimeoutS = t }
        c.site = file.site
        if let site {
            do {
                c.site = try SiteDescription(text: try String(contentsOfFile: site, encoding: .utf8), path: site)
            } catch {
                throw ValidationError("--site: \(error)")
            }
        }
        c.homeAssistantDiscoveryPrefix = homeassistantDiscoveryPrefix ?? file.homeAssistantDiscoveryPrefix
        if let name = instance ?? file.instance {
            if let problem = FleetConfiguration.problem(instance: name) {
                throw ValidationError("--instance: \(problem)")
            }
            c.instance = name
        }
        if let l = file.leaseS { c.lease = FleetLease.Settings(leaseS: l) }
        let logger = Logger(label: "blegateway-fleet")
        let service = try FleetService(configuration: c, logger: logger) { bound in
            let shown = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
            let name = shown.contains(":") ? "[\(shown)]" : shown
            // The first line a person (or `make demo`) needs: where to point the browser.
            StandardOutput.write("fleet dashboard: http://\(name):\(bound)/  (metrics at /metrics)\n")
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
