import BLEHCI
import BLETransport
import Foundation

/// Counters for one virtual controller, for logs, tests and the benchmark.
public struct GatewayStats: Sendable, Hashable {
    public var connectionsAccepted = 0
    public var commands = 0
    public var unknownCommands = 0
    /// Commands that arrived while the previous command's response was still unsent (no credit).
    public var commandsWithoutCredit = 0
    /// Commands dropped because the adapter was powered off by a fault.
    public var commandsWhilePoweredOff = 0
    /// Bytes from the host that were not a well-formed H4 packet (skipped while resynchronising).
    public var malformedBytes = 0
    /// Well-formed packets the controller does not take (ACL, SCO, ISO, events).
    public var unexpectedPackets = 0
    public var reportsSent = 0
    /// Reports lost because the host was reading too slowly.
    public var reportsDroppedHostSlow = 0
    /// Reports withheld because the host's event masks exclude them.
    public var reportsMasked = 0
}

/// One gateway's virtual adapter: its controller state machine, its host connection, its fault
/// state and counters. The reader thread (commands) and the radio (reports) both go through the
/// lock; nothing else touches the controller.
public final class GatewayNode: @unchecked Sendable {
    public let spec: GatewaySpec
    let clock: any BLEClock
    private let lock = NSLock()
    private var controller: VirtualController
    private var connection: HostConnection?
    private var powered = true
    private var silenced = false
    private var _stats = GatewayStats()

    init(spec: GatewaySpec, clock: any BLEClock) {
        self.spec = spec
        self.clock = clock
        self.controller = VirtualController(address: spec.address)
    }

    public var stats: GatewayStats { lock.withLock { _stats } }
    public var isConnected: Bool { lock.withLock { connection != nil } }

    /// A new host: the previous one (if any) is dropped and the controller starts from power-on,
    /// as when a process reopens a UART or a user channel.
    func attach(fd: Int32) {
        let conn = HostConnection(fd: fd)
        let old: HostConnection? = lock.withLock {
            let old = connection
            connection = conn
            controller.reset()
            _stats.connectionsAccepted += 1
            return old
        }
        old?.close()
        conn.start(
            onPacket: { [weak self] p in self?.receive(p, from: conn) },
            onGarbage: { [weak self] n in self?.lock.withLock { self?._stats.malformedBytes += n } },
            onClose: { [weak self] in
                self?.lock.withLock { if self?.connection === conn { self?.connection = nil } }
            })
    }

    /// Unplug: the host sees end of file.
    func detach() {
        let c: HostConnection? = lock.withLock {
            defer { connection = nil }
            return connection
        }
        c?.close()
    }

    private func receive(_ packet: H4Packet, from conn: HostConnection) {
        lock.lock()
        defer { lock.unlock() }
        guard packet.type == .command else {
            _stats.unexpectedPackets += 1
            return
        }
        _stats.commands += 1
        guard powered else {
            _stats.commandsWhilePoweredOff += 1
            return
        }
        let before = controller.unknownCommands
        let events = controller.handle(command: packet.payload, now: clock.now())
        _stats.unknownCommands += controller.unknownCommands - before
        if conn.enqueueResponse(events) { _stats.commandsWithoutCredit += 1 }
    }

    /// What the radio needs to know to deliver reports to this gateway now.
    struct Listening {
        var scan: ScanState
        var deliver: Bool
    }

    func listening() -> Listening {
        lock.withLock {
            Listening(scan: controller.scan, deliver: connection != nil && powered && !silenced && controller.scan.enabled)
        }
    }

    /// Hands encoded reports to the host. Returns false when the host is too far behind and the
    /// caller asked not to drop (free-running: the radio should wait and retry).
    func deliver(_ bytes: [UInt8], reports: Int, generation: UInt64, dropIfFull: Bool) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let connection, powered, !silenced, controller.scan.generation == generation, controller.scan.enabled
        else { return true }  // scanning changed since the reports were made: a real controller would not have sent them
        guard controller.scan.reportsUnmasked else {
            _stats.reportsMasked += reports
            return true
        }
        if !dropIfFull && connection.pendingBytes > HostConnection.highWater { return false }
        if connection.enqueue(bytes, dropIfFull: dropIfFull) {
            _stats.reportsSent += reports
        } else {
            _stats.reportsDroppedHostSlow += reports
        }
        return true
    }

    /// An extended scan's Duration ran out with no Period: scanning stops and, if unmasked, the
    /// host hears HCI_LE_Scan_Timeout (§7.8.65).
    func scanTimedOut(generation: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        guard controller.scan.enabled, controller.scan.generation == generation else { return }
        controller.scan.enabled = false
        if powered, controller.allowsLEMeta(subevent: SimEventCode.leScanTimeout) {
            _ = connection?.enqueue(SimEvents.leScanTimeout(), dropIfFull: false)
        }
    }

    // MARK: Faults

    func powerOff(hardwareError code: UInt8?) {
        lock.lock()
        defer { lock.unlock() }
        if let code, let connection { _ = connection.enqueue(SimEvents.hardwareError(code: code), dropIfFull: false) }
        powered = false
        controller.reset()
    }

    func powerOn() {
        lock.withLock {
            powered = true
            controller.reset()
        }
    }

    func setSilenced(_ on: Bool) { lock.withLock { silenced = on } }
}
