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

        @Option(
            help: """
                Judge file access as this user. Default: as root, the service's user (blegateway) when it exists, \
                since root may read every file; otherwise the user running the check.
                """)
        var user: String?

        /// Whose access the check judges, said on stderr when it is not the caller's own.
        func judge() throws -> FileAccessJudge {
            if let user {
                guard let j = FileAccessJudge.user(named: user) else {
                    FileHandle.standardError.write(Data("\(file): --user \(user): no such user\n".utf8))
                    throw ExitCode(2)
                }
                return j
            }
            guard geteuid() == 0 else { return .thisProcess }
            guard let j = FileAccessJudge.user(named: FileAccessJudge.serviceUserName) else {
                FileHandle.standardError.write(
                    Data(
                        """
                        \(file): note: run as root and there is no user \(FileAccessJudge.serviceUserName); file \
                        access is judged as root (give --user for the user the gateway runs as)

                        """.utf8))
                return .thisProcess
            }
            return j
        }

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
                let judge = try judge()
                do {
                    c = try ConfigurationPreflight.check(loaded.configuration, judge: judge) { key, path in
                        FileHandle.standardError.write(
                            Data(
                                """
                                \(file): note: \(key): \(path) is made by systemd (LoadCredential=) when the \
                                service starts; not checked here

                                """.utf8))
                    }
                } catch let e as ConfigurationError {
                    FileHandle.standardError.write(Data("\(file): \(e)\n".utf8))
                    throw ExitCode(2)
                }
                let access = if case .user = judge { ", files as \(judge) may use them" } else { "" }
                print(
                    "\(file): valid (gateway \(c.gateway.id), broker \(c.mqtt.broker), spool \(c.spool.path)\(access))")
            } catch let exit as ExitCode {
                throw exit  // said already
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
