import ArgumentParser
import BLEConfiguration
import BLEGateway
import BLEHCI
import BLEHost
import BLETransport
import Foundation
import Logging

/// `blegateway enrol`: pair a phone or watch once and keep its identity key, so every gateway that loads the
/// identities file follows it through its rotating addresses. Exclusive mode: run it while the gateway is stopped
/// (or on another adapter); our own host pairs. Shared mode: beside bluetoothd, whose agent confirms the pairing
/// the kernel answers; the key is read as the kernel announces it. A running gateway enrols through `…/enrol`.
struct EnrolCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enrol",
        abstract: "Advertise as a heart-rate sensor, pair with a phone or watch, and keep its identity key.",
        discussion: """
            On the phone: Settings → Bluetooth, tap the gateway's name, and confirm that both sides show the same \
            six digits. The identity is added to identity_keys_file (default \(IdentityKeyFile.defaultPath), \
            mode 0600); enrolling the same device again replaces its entry. See docs/PRESENCE.md.
            """)

    @Option(help: "The name the identity gets (payloads and logs use it), e.g. alice-iphone.")
    var name: String

    @Option(help: "The configuration file: its adapter.device and identity_keys_file are used.")
    var config: String?

    @Option(help: "The adapter: hci0 (exclusive), unix:PATH, tcp:HOST:PORT or serial:/dev/ttyX[@BAUD].")
    var device: String?

    @Option(
        help: "exclusive (our own host pairs; the gateway stopped) or shared (beside bluetoothd, whose agent confirms)."
    )
    var mode: AdapterMode?

    @Option(help: "The identities file to add to (overrides identity_keys_file).")
    var identities: String?

    @Option(help: "The name the phone lists while the gateway advertises.")
    var advertise: String = "BLEGateway"

    @Option(help: "Seconds to wait for a phone to pair.")
    var timeout: Double = 120

    @Flag(help: "Accept the six digits without asking (for a device with no display, or a test).")
    var yes = false

    func validate() throws {
        guard !name.isEmpty, !name.contains(where: \.isNewline) else {
            throw ValidationError("--name must be a non-empty single line")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard !advertise.isEmpty else { throw ValidationError("--advertise must not be empty") }
    }

    func run() async throws {
        var deviceText = device
        var file = identities
        var adapterMode = mode
        if let config {
            let loaded: ConfigurationLoader.Loaded
            do { loaded = try ConfigurationLoader.load(path: config) } catch {
                throw ValidationError("\(error)")
            }
            deviceText = deviceText ?? loaded.configuration.adapter.device
            adapterMode = adapterMode ?? loaded.configuration.adapter.mode
            file = file ?? loaded.configuration.identityKeysFile
        }
        let path = file ?? IdentityKeyFile.defaultPath
        let spec: DeviceSpec
        do { spec = try DeviceSpec(parsing: deviceText ?? "hci0") } catch { throw ValidationError("\(error)") }
        if case .file = spec { throw ValidationError("a capture file cannot pair: give a live adapter") }
        let shared = adapterMode == .shared
        var sharedAdapter: String?
        if shared {
            guard case .kernel(let adapter) = spec else {
                throw ValidationError("shared mode pairs through the kernel: give a kernel adapter (hciN), not \(spec)")
            }
            sharedAdapter = adapter
        }

        CommandLogging.bootstrap(level: .warning)
        let logger = Logger(label: "blegateway.enrol")
        let clock = SystemClock()
        var options = Enrolment.Options()
        options.name = advertise
        options.timeout = .milliseconds(Int64(timeout * 1000))
        let autoConfirm = yes
        let progress: @Sendable (Enrolment.Progress) -> Void = { p in
            switch p {
            case .advertising(let a, let n):
                Self.say("advertising as \"\(n)\" from \(a); pair from the phone now")
                if shared {
                    Self.say("shared mode: bluetoothd's agent confirms the six digits (bluetoothctl: agent on)")
                }
            case .connected(let a): Self.say("connected: \(a)")
            case .passkey(let p): Self.say("type \(String(format: "%06u", p)) on the phone")
            case .paired(let i): Self.say("paired: identity \(i.address)")
            }
        }
        let identity: SMPPairingResponder.PeerIdentity
        do {
            if let sharedAdapter {
                identity = try await SharedEnrolment(
                    adapter: sharedAdapter, options: options, clock: clock, logger: logger
                ).run(progress: progress)
            } else {
                let transport: any HCITransport
                do {
                    transport = try openTransport(spec, mode: .exclusive, clock: clock)
                } catch let e as TransportError {
                    FileHandle.standardError.write(Data("error: \(e.kind): \(e.message)\n".utf8))
                    throw ExitCode(2)
                }
                defer { transport.close() }
                identity = try await Enrolment(options: options, clock: clock, logger: logger).run(
                    transport: transport,
                    confirm: { digits in
                        let shown = String(format: "%06u", digits)
                        if autoConfirm {
                            Self.say("compare \(shown): accepted (--yes)")
                            return true
                        }
                        return await Self.ask("Does the phone show \(shown)? [y/N] ")
                    },
                    progress: progress)
            }
        } catch let failed as Enrolment.Failed {
            FileHandle.standardError.write(Data("enrol: \(failed)\n".utf8))
            throw ExitCode(1)
        } catch let e as TransportError {
            FileHandle.standardError.write(Data("error: \(e.kind): \(e.message)\n".utf8))
            throw ExitCode(2)
        } catch let e as ManagementError {
            FileHandle.standardError.write(Data("enrol: \(e)\n".utf8))
            throw ExitCode(1)
        }
        let entry = IdentityKeyFile.Entry(name: name, irk: identity.irk, address: identity.address)
        let change: IdentityKeyFile.Change
        do { change = try IdentityKeyFile.enrol(entry, at: path) } catch {
            FileHandle.standardError.write(Data("enrol: \(error)\n".utf8))
            throw ExitCode(1)
        }
        switch change {
        case .added: Self.say("enrolled \(name) (\(identity.address)) in \(path)")
        case .updated(let previous):
            Self.say("enrolled \(name) (\(identity.address)) in \(path), replacing \"\(previous)\"")
        }
        Self.say("restart the gateway (or copy \(path) to every gateway) to follow it")
    }

    static func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    /// Reads one answer from the terminal on a thread of its own, so the pairing's timer keeps running.
    static func ask(_ prompt: String) async -> Bool {
        FileHandle.standardOutput.write(Data(prompt.utf8))
        return await withCheckedContinuation { c in
            Thread.detachNewThread {
                let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
                c.resume(returning: answer == "y" || answer == "yes")
            }
        }
    }
}
