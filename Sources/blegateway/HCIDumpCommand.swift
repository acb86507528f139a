import ArgumentParser
import BLETransport
import Foundation

/// `blegateway hci-dump`: opens a transport, optionally sends raw HCI commands, and prints every
/// packet the controller sends as one hex line (H4 indicator first). A tool for bring-up, for the
/// kernel VM harness, and for looking at what an adapter really says.
struct HCIDumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hci-dump",
        abstract: "Print every HCI packet from a controller as a hex line; optionally send raw commands first.")

    @Option(help: "hciN, unix:PATH, tcp:HOST:PORT, serial:/dev/ttyX[@BAUD][,rtscts] or file:PATH.")
    var device: String

    @Option(help: "For hciN: exclusive (HCI user channel) or shared (beside bluetoothd, receive-only).")
    var mode: AdapterMode = .exclusive

    @Option(
        name: .customLong("send"),
        help: "A command packet in hex, H4 indicator included (01 0c20 02 0100 = LE Set Scan Enable). Repeatable.")
    var sends: [String] = []

    @Option(help: "Seconds to listen before exiting.")
    var duration: Double = 5

    @OptionGroup var capture: CaptureArguments

    @Flag(help: "For file: sources, deliver the packets at the pace they were recorded, as a radio would.")
    var realtime = false

    @Option(
        help:
            "Shared mode: restart the kernel's discovery every this many seconds to clear its duplicate filter (0: never)."
    )
    var restartInterval: Double = 10

    @Flag(help: "Shared mode: do not register the advertisement monitor that turns the duplicate filter off.")
    var keepDuplicateFilter = false

    @Flag(help: "Exclusive mode: if the kernel says the adapter is busy, bring it down (HCIDEVDOWN) and retry.")
    var forceDown = false

    func run() async throws {
        let adapterMode = mode
        let packets = try sends.map { text -> H4Packet in
            guard let bytes = Self.hex(text), bytes.count >= 4, bytes[0] == H4PacketType.command.rawValue else {
                throw ValidationError("--send \(text): expected an H4 command in hex, starting with 01")
            }
            return H4Packet(type: .command, payload: Array(bytes.dropFirst()))
        }
        let clock = SystemClock()
        var options = TransportOptions()
        options.bringDownIfUp = forceDown
        capture.apply(to: &options)
        options.replayPacing = realtime ? .recorded : .asFastAsPossible
        options.sharedDisableDuplicateFilter = !keepDuplicateFilter
        options.sharedRestartInterval = restartInterval > 0 ? .seconds(restartInterval) : nil
        let transport: any HCITransport
        do {
            let spec = try DeviceSpec(parsing: device)
            transport = try openTransport(spec, mode: adapterMode, clock: clock, options: options)
        } catch let error as TransportError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        defer { transport.close() }
        FileHandle.standardError.write(Data("hci-dump: opened \(transport.name)\n".utf8))

        // Every line goes out with write(2) as it is made; a signal ends the dump the way its duration does, and the
        // summary's count is what the output holds.
        let tally = Locked(Tally())
        let signalled = try await cancellingOnSignals {
            try await withTaskCancellationHandler {
                try await Self.dump(
                    transport, sending: packets, for: duration, clock: clock, tally: tally)
            } onCancel: {
                transport.close()
            }
        }
        let (printed, outcome) = tally.withLock { ($0.printed, $0.outcome) }
        let ending = signalled ? "stopped by signal" : outcome
        FileHandle.standardError.write(Data("hci-dump: \(printed) packets, \(ending)\n".utf8))
        if ending.hasPrefix("error") { throw ExitCode(4) }
    }

    /// The packets printed so far and how the dump ended: what the summary line says.
    struct Tally {
        var printed = 0
        var outcome = "end of input"
    }

    /// Sends `packets`, each after the controller answered the one before (or 2 s passed), printing every packet
    /// that arrives until `duration` has passed or the input ends.
    static func dump(
        _ transport: any HCITransport, sending packets: [H4Packet], for duration: Double, clock: SystemClock,
        tally: Locked<Tally>
    ) async throws {
        // Command Complete / Command Status opcodes, so each command waits for the controller's answer.
        let (answers, answered) = AsyncStream.makeStream(of: UInt16.self)
        let reader = Task {
            do {
                for try await p in transport.incoming {
                    StandardOutput.write(Self.hexString(p.h4Bytes) + "\n")
                    tally.withLock { $0.printed += 1 }
                    if p.type == .event, let op = Self.answeredOpcode(p.payload) { answered.yield(op) }
                }
                answered.finish()
                return "end of input"
            } catch {
                answered.finish()
                return "error: \(error)"
            }
        }
        var answersIterator = answers.makeAsyncIterator()
        for p in packets {
            do { try transport.send(p) } catch {
                FileHandle.standardError.write(Data("error: send \(Self.hexString(p.h4Bytes)): \(error)\n".utf8))
                throw ExitCode(3)
            }
            let opcode = UInt16(p.payload[0]) | UInt16(p.payload[1]) << 8
            let deadline = clock.now() + .seconds(2)
            let waiter = Task {
                try? await clock.sleep(until: deadline)
                answered.yield(0xFFFF)
            }
            while let op = await answersIterator.next(), op != opcode, op != 0xFFFF {}
            waiter.cancel()
        }
        let timer = Task {
            try? await clock.sleep(for: .seconds(duration))
            transport.close()
        }
        let ended = await reader.value
        timer.cancel()
        tally.withLock { $0.outcome = ended }
    }

    /// The opcode a Command Complete (0x0E) or Command Status (0x0F) event answers
    /// (Core v5.4, Vol 4, Part E, §7.7.14 and §7.7.15).
    static func answeredOpcode(_ event: [UInt8]) -> UInt16? {
        if event.count >= 5, event[0] == 0x0E { return UInt16(event[3]) | UInt16(event[4]) << 8 }
        if event.count >= 6, event[0] == 0x0F { return UInt16(event[4]) | UInt16(event[5]) << 8 }
        return nil
    }

    /// Hex as people type it (spaces, ':' and '-' between bytes are allowed).
    static func hex(_ text: String) -> [UInt8]? { HexDigits.parse(text) }

    static func hexString(_ bytes: [UInt8]) -> String { HexDigits.string(bytes) }
}
