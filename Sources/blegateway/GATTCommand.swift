import ArgumentParser
import BLEHost
import BLESimulator
import BLETransport
import Foundation

/// `blegateway gatt`: connects to a peripheral through the kernel (an L2CAP socket on the ATT fixed channel,
/// shared mode) and runs ATT over it, printing one line per thing done. A tool for bring-up and for the
/// kernel VM harness, where `gatt-serve` on the other virtual adapter is the peripheral.
struct GATTCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatt",
        abstract: "Connect to a peripheral's GATT server through a kernel L2CAP socket and talk ATT to it.")

    @Option(help: "The local adapter (hciN) or its address.")
    var adapter: String = "hci0"

    @Option(help: "The peripheral's address, AA:BB:CC:DD:EE:FF.")
    var connect: String

    @Flag(help: "The peripheral's address is a random one (default: public).")
    var random = false

    @Option(help: "Seconds to wait for the connection.")
    var timeout: Double = 10

    @Option(help: "The ATT_MTU to offer (23…517).")
    var mtu: Int = 247

    @Option(help: "Read this characteristic (16-bit UUID in hex, e.g. 2A6E). Repeatable.")
    var read: [String] = []

    @Option(help: "Subscribe to this characteristic's notifications (16-bit UUID in hex).")
    var subscribe: String?

    @Option(help: "With --subscribe: the notifications to wait for.")
    var count: Int = 3

    func validate() throws {
        guard L2CAPAddress(connect, type: .public) != nil else {
            throw ValidationError("--connect \(connect): expected an address AA:BB:CC:DD:EE:FF")
        }
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be 23…517") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() async throws {
        let clock = SystemClock()
        let peer = L2CAPAddress(connect, type: random ? .random : .public)!
        let started = clock.now()
        let bearer: KernelATTBearer
        do {
            bearer = try await KernelATTBearer.connect(to: peer, adapter: adapter, timeout: .seconds(timeout),
                                                       clock: clock)
        } catch let error as TransportError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        defer { bearer.drop() }
        let took = (clock.now() - started).seconds
        say("connected \(bearer.socket.name) from \(bearer.socket.local) in \(String(format: "%.1f", took)) s")

        // Exchange MTU (Vol 3, Part F, §3.4.2.1): opcode 0x02, Client Rx MTU (2 octets).
        var request = ByteWriter()
        request.u8(0x02)
        request.le16(UInt16(mtu))
        let response = try await exchange(request.bytes, over: bearer, clock: clock)
        var cursor = ByteCursor(response)
        guard cursor.readU8() == 0x03, let serverMTU = cursor.readLE16() else {
            throw failure("unexpected answer to Exchange MTU: \(HCIDumpCommand.hexString(response))")
        }
        say("mtu \(min(Int(serverMTU), mtu)) (server rx mtu \(serverMTU), ours \(mtu))")
        if !read.isEmpty || subscribe != nil {
            throw failure("--read and --subscribe need the GATT client, which this build does not have yet")
        }
    }

    /// Sends one request and waits for its response (or an Error Response), within the ATT transaction
    /// timeout of 30 s (Vol 3, Part F, §3.3.3).
    private func exchange(_ pdu: [UInt8], over bearer: KernelATTBearer, clock: any BLEClock) async throws -> [UInt8] {
        try bearer.send(pdu)
        return try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                for await answer in bearer.incoming where answer.first == pdu[0] + 1 || answer.first == 0x01 {
                    return answer
                }
                return nil
            }
            group.addTask {
                try await clock.sleep(for: .seconds(30))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                throw failure("no answer to \(HCIDumpCommand.hexString(pdu))"
                              + (bearer.endReason.map { ": \($0.message)" } ?? ""))
            }
            return first
        }
    }

    private func failure(_ text: String) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(text)\n".utf8))
        return ExitCode(1)
    }
}

/// `blegateway gatt-serve`: a peripheral of our own for the kernel VM. Listens on an adapter's ATT fixed
/// channel through a kernel L2CAP socket and answers with the simulator's sensor GATT server
/// (Environmental Sensing: Temperature 0x2A6E, Humidity 0x2A6F), sending notifications to subscribers.
/// The adapter must be connectable and advertising (`btmgmt -i hci1 connectable on`, `advertising on`),
/// and nothing else may serve ATT on it (bluetoothd does, on every adapter).
struct GATTServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatt-serve",
        abstract: "Serve the simulator's sensor GATT database on an adapter through a kernel L2CAP socket.")

    @Option(help: "The adapter to serve on (hciN) or its address.")
    var adapter: String = "hci1"

    @Option(help: "The GAP Device Name.")
    var name: String = "blegw-sensor"

    @Option(help: "Seconds between notifications to subscribers.")
    var notifyInterval: Double = 1

    @Option(help: "Seconds to serve before exiting (0: until interrupted).")
    var duration: Double = 0

    func validate() throws {
        guard notifyInterval > 0 else { throw ValidationError("--notify-interval must be positive") }
        guard duration >= 0 else { throw ValidationError("--duration must not be negative") }
    }

    func run() async throws {
        let clock = SystemClock()
        let listener: L2CAPListener
        do {
            listener = try L2CAPListener(adapter: adapter)
        } catch let error as TransportError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        defer { listener.close() }
        say("listening on \(adapter) \(listener.local) CID 0x0004 (ATT)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            if duration > 0 {
                group.addTask {
                    try await clock.sleep(for: .seconds(duration))
                    listener.close()
                }
            }
            var links = 0
            while true {
                let socket: L2CAPSocket
                do {
                    socket = try await listener.accept()
                } catch let error as TransportError where error.kind == .closed {
                    break
                }
                links += 1
                say("accepted \(socket.peer) on \(socket.local)")
                let (name, phase, interval) = (name, Double(links), Duration.seconds(notifyInterval))
                group.addTask { await Self.serve(socket, name: name, phase: phase, interval: interval, clock: clock) }
            }
            group.cancelAll()
        }
        say("gatt-serve: done")
    }

    /// Answers one link's requests and notifies its subscriptions until the link ends.
    static func serve(_ socket: L2CAPSocket, name: String, phase: Double, interval: Duration,
                      clock: any BLEClock) async {
        let server = Locked(SimGATTServer(deviceName: name, phase: phase))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    do { try await clock.sleep(for: interval) } catch { return }
                    let due = server.withLock { $0.notifications(at: clock.now().seconds) }
                    for pdu in due {
                        do { try socket.send(pdu) } catch { return }
                        say("notify \(HCIDumpCommand.hexString(pdu))")
                    }
                }
            }
            for await pdu in socket.incoming {
                say("rx \(HCIDumpCommand.hexString(pdu))")
                let now = clock.now().seconds
                guard let answer = server.withLock({ $0.handle(request: pdu, now: now) }) else { continue }
                do { try socket.send(answer) } catch {
                    say("send failed: \(error)")
                    break
                }
                say("tx \(HCIDumpCommand.hexString(answer))")
            }
            group.cancelAll()
        }
        socket.close()
        say(socket.endReason.map { $0.message } ?? "link \(socket.peer) ended")
    }
}

private func say(_ line: String) { StandardOutput.write(line + "\n") }
