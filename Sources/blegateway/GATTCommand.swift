import ArgumentParser
import BLEHCI
import BLEHost
import BLESimulator
import BLETransport
import Foundation
import Synchronization

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

    @Flag(help: "With --subscribe: ask for indications (confirmed) instead of notifications.")
    var indicate = false

    @Option(help: "With --subscribe: the notifications (or indications) to wait for.")
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
        let reads = try read.map { text -> BluetoothUUID in
            guard let uuid = BluetoothUUID(text) else { throw ValidationError("--read \(text): not a UUID") }
            return uuid
        }
        let subscription = try subscribe.map { text -> BluetoothUUID in
            guard let uuid = BluetoothUUID(text) else { throw ValidationError("--subscribe \(text): not a UUID") }
            return uuid
        }
        let started = clock.now()
        let bearer: KernelATTBearer
        do {
            bearer = try await KernelATTBearer.connect(
                to: peer, adapter: adapter, timeout: .seconds(timeout),
                clock: clock)
        } catch let error as TransportError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        let took = (clock.now() - started).seconds
        say("connected \(bearer.socket.name) from \(bearer.socket.local) in \(String(format: "%.1f", took)) s")

        let client = GATTClient(bearer: bearer, clock: clock)
        // A signal ends the session as the end of its work does: the link is dropped, and the summary's count is
        // what stdout holds (every line went out with write(2) as it was made).
        let result = try await untilSignalled { [self] in
            await withTaskCancellationHandler {
                await self.converse(client, bearer: bearer, reads: reads, subscription: subscription, clock: clock)
            } onCancel: {
                bearer.drop()
            }
        }
        guard let result else {
            FileHandle.standardError.write(
                Data("gatt: \(printedLines.load(ordering: .relaxed)) lines, stopped by signal\n".utf8))
            return
        }
        if case .failure(let error) = result {
            let reason = bearer.endReason.map { " (\($0.message))" } ?? ""
            FileHandle.standardError.write(Data("error: \(error)\(reason)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The client's service loop beside the session; the link is dropped when the session ends.
    func converse(
        _ client: GATTClient, bearer: KernelATTBearer, reads: [BluetoothUUID], subscription: BluetoothUUID?,
        clock: SystemClock
    ) async -> Result<Void, any Error> {
        await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            // The client's one service loop; it returns once the bearer is dropped below.
            group.addTask {
                do { try await client.run() } catch { return .failure(error) }
                return nil
            }
            var outcome: Result<Void, any Error> = .success(())
            do {
                try await self.session(client, reads: reads, subscription: subscription, clock: clock)
            } catch {
                outcome = .failure(error)
            }
            bearer.drop()
            for await result in group {
                if case .failure(let error)? = result, case .success = outcome { outcome = .failure(error) }
            }
            return outcome
        }
    }

    /// Exchange MTU, discover everything, read, subscribe and wait for notifications, printing each step.
    private func session(
        _ client: GATTClient, reads: [BluetoothUUID], subscription: BluetoothUUID?,
        clock: any BLEClock
    ) async throws {
        let agreed = try await client.exchangeMTU(UInt16(mtu))
        say("mtu \(agreed)")
        let database = try await client.discoverAll()
        for service in database.services {
            say(
                "service 0x\(service.uuid) handles 0x\(hex4(service.startHandle))"
                    + "-0x\(hex4(service.endHandle))")
            for c in service.characteristics {
                say(
                    "  characteristic 0x\(c.uuid) value handle 0x\(hex4(c.valueHandle))"
                        + " properties \(c.properties)" + (c.cccdHandle.map { " cccd 0x\(hex4($0))" } ?? ""))
            }
        }
        for uuid in reads {
            guard let c = database.characteristic(uuid) else { throw GATTCommandError("no characteristic \(uuid)") }
            let value = try await client.read(c.valueHandle)
            say("read 0x\(uuid) handle 0x\(hex4(c.valueHandle)): \(HCIDumpCommand.hexString(value))")
        }
        guard let subscription else { return }
        guard let c = database.characteristic(subscription) else {
            throw GATTCommandError("no characteristic \(subscription)")
        }
        try await client.subscribe(c, indicate: indicate)
        say("subscribed 0x\(subscription) cccd 0x\(hex4(c.cccdHandle ?? 0))" + (indicate ? " (indications)" : ""))
        let wanted = count
        // Notifications come at the peripheral's pace; allow 5 s for each, on the clock.
        let deadline = Duration.seconds(5 * max(wanted, 1) + 5)
        let received = try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                var n = 0
                for await event in client.events {
                    guard case .value(let handle, let bytes, let indication) = event, handle == c.valueHandle else {
                        continue
                    }
                    n += 1
                    let kind = indication ? "indication" : "notification"
                    say(
                        "\(kind) 0x\(subscription) handle 0x\(hex4(handle)):"
                            + " \(HCIDumpCommand.hexString(bytes))")
                    if n >= wanted { break }
                }
                return n
            }
            group.addTask {
                try await clock.sleep(for: deadline)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let received, received >= wanted else {
            let what = indicate ? "indications" : "notifications"
            throw GATTCommandError("fewer than \(wanted) \(what) of \(subscription) within \(deadline)")
        }
        try await client.unsubscribe(c)
        say("unsubscribed 0x\(subscription)")
    }
}

struct GATTCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}

/// `blegateway gatt-serve`: a peripheral of our own for the kernel VM. Listens on an adapter's ATT fixed
/// channel through a kernel L2CAP socket and answers with the simulator's sensor GATT server
/// (GAP, Environmental Sensing, GATT, Battery, Immediate Alert, Device Information; see `SimGATTServer`), sending
/// notifications and indications to subscribers.
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

    @Option(help: "Seconds between notifications (and periodic indications) to subscribers.")
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
    static func serve(
        _ socket: L2CAPSocket, name: String, phase: Double, interval: Duration,
        clock: any BLEClock
    ) async {
        let server = Locked(SimGATTServer(deviceName: name, phase: phase))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    do { try await clock.sleep(for: interval) } catch { return }
                    let now = clock.now().seconds
                    let due = server.withLock { s in
                        s.queuePeriodicIndications()
                        return s.notifications(at: now) + (s.nextIndication(at: now).map { [$0] } ?? [])
                    }
                    for pdu in due {
                        do { try socket.send(pdu) } catch { return }
                        say("notify \(HCIDumpCommand.hexString(pdu))")
                    }
                }
            }
            for await pdu in socket.incoming {
                say("rx \(HCIDumpCommand.hexString(pdu))")
                let now = clock.now().seconds
                // A Handle Value Confirmation frees the next queued indication (Vol 3, Part F, §3.4.7.2).
                let (answer, indication) = server.withLock { s in
                    (s.handle(request: pdu, now: now), s.nextIndication(at: now))
                }
                do {
                    if let answer {
                        try socket.send(answer)
                        say("tx \(HCIDumpCommand.hexString(answer))")
                    }
                    if let indication {
                        try socket.send(indication)
                        say("indicate \(HCIDumpCommand.hexString(indication))")
                    }
                } catch {
                    say("send failed: \(error)")
                    break
                }
            }
            group.cancelAll()
        }
        socket.close()
        say(socket.endReason.map { $0.message } ?? "link \(socket.peer) ended")
    }
}

/// Lines `say` has written, for the summary after a signal.
private let printedLines = Atomic<Int>(0)

private func say(_ line: String) {
    StandardOutput.write(line + "\n")
    printedLines.wrappingAdd(1, ordering: .relaxed)
}
private func hex4(_ v: UInt16) -> String { upperHex(v, digits: 4) }
