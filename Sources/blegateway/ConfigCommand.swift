import ArgumentParser
import BLEConfiguration
import BLEGateway
import Foundation

/// `blegateway config …`: the local configuration file, and the remote documents on the broker.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the local configuration; push and read the remote one.",
        subcommands: [Check.self, Push.self, Get.self, Keygen.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a configuration file; errors name the line, column and key.")

        @Argument(help: "The YAML configuration file.")
        var file: String

        func run() async throws {
            do {
                let loaded = try ConfigurationLoader.load(path: file)
                for w in loaded.warnings { FileHandle.standardError.write(Data("\(file): warning: \(w)\n".utf8)) }
                // What `run` would hit at start (paths, permissions, key files), on this machine.
                let c: GatewayConfiguration
                do { c = try ConfigurationPreflight.check(loaded.configuration) } catch let e as ConfigurationError {
                    FileHandle.standardError.write(Data("\(file): \(e)\n".utf8))
                    throw ExitCode(2)
                }
                print("\(file): valid (gateway \(c.gateway.id), broker \(c.mqtt.broker), spool \(c.spool.path))")
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
