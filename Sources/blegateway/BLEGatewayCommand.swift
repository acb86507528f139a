import ArgumentParser

@main
struct BLEGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blegateway",
        abstract: "A Bluetooth LE to MQTT gateway for Linux boards.",
        version: "0.1.0",
        subcommands: [RunCommand.self, ConfigCommand.self, WatchCommand.self, SimCommand.self, HCIDumpCommand.self])
}
