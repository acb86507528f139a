import ArgumentParser
import BLEGateway
import Foundation

@main
struct BLEGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blegateway",
        abstract: "A Bluetooth LE to MQTT gateway for Linux boards.",
        version: GatewayRuntime.version,
        subcommands: [
            ScanCommand.self, RunCommand.self, ConfigCommand.self, WatchCommand.self, FleetCommand.self,
            SimCommand.self, HCIDumpCommand.self, GATTCommand.self, GATTServeCommand.self,
            ExplainCommand.self, SiteCommand.self, SpoolCommand.self, EnrolCommand.self,
        ])

    static func main() async {
        // A write to a peer that has gone (an unplugged H4 link, a closed simulator socket, a vanished broker)
        // must come back as EPIPE, which the transports report and the lifecycle recovers from — not as a
        // signal that kills the gateway.
        signal(SIGPIPE, SIG_IGN)
        await main(nil)
    }
}
