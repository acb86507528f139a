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
                let unknown = loaded.warnings.filter(\.isUnknownKey)
                for w in loaded.warnings where !w.isUnknownKey {
                    FileHandle.standardError.write(Data("\(file): warning: \(w)\n".utf8))
                }
                // A key this version does not know is a typo until shown otherwise: the default stays in force.
                for w in unknown {
                    let e = ConfigurationError(path: w.path, line: w.line, column: w.column, "unknown key")
                    FileHandle.standardError.write(Data("\(file): \(e)\n".utf8))
                }
                guard unknown.isEmpty else {
                    FileHandle.standardError.write(
                        Data("\(file): not valid: \(unknown.count) unknown key(s); fix or remove them\n".utf8))
                    throw ExitCode(2)
                }
                // What `run` would hit at start (paths, permissions, key files), on this machine.
                let c: GatewayConfiguration
                do { c = try ConfigurationPreflight.check(loaded.configuration) } catch let e as ConfigurationError {
                    FileHandle.standardError.write(Data("\(file): \(e)\n".utf8))
                    throw ExitCode(2)
                }
                print("\(file): valid (gateway \(c.gateway.id), broker \(c.mqtt.broker), spool \(c.spool.path))")
            } catch let exit as ExitCode {
                throw exit  // said already
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
