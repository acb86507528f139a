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
    /// Well-formed packets the controller does not take (SCO, ISO, events, ACL for no link or not ATT).
    public var unexpectedPackets = 0
    /// ACL packets from the host.
    public var aclPackets = 0
    public var connectionsEstablished = 0
    /// Connection attempts ended with 0x3E under a `connection_failure` fault.
    public var connectionsFailed = 0
    /// ACL packets the host sent with no buffer credit left (more than LE Read Buffer Size's
    /// count outstanding); the controller dropped them.
    public var hostFlowControlViolations = 0
    /// Links lost because the peer stayed out of range for the supervision timeout.
    public var supervisionTimeouts = 0
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
    private var failingConnections = false
    private var holdingCredits = false
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
        // A host that was replaced (or unplugged) no longer reaches the controller: its reader may still be
        // draining bytes it sent before, and a stale HCI_Reset from it would silently stop the new host's scan.
        guard connection === conn else { return }
        if packet.type == .acl && powered {
            let (events, understood, overflow) = controller.handleACL(
                packet.payload, now: clock.now().seconds, holdCredits: holdingCredits)
            if !understood { _stats.unexpectedPackets += 1 }
            if overflow { _stats.hostFlowControlViolations += 1 }
            _stats.aclPackets += 1
            if !events.isEmpty { _ = conn.enqueue(events.flatMap { $0 }, dropIfFull: false) }
            return
        }
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
        /// The peer of a pending LE Create Connection, while the radio can hear.
        var connectTo: BDAddress?
        /// Links to tick, or a failing attempt waiting for its deadline.
        var hasConnections: Bool
        /// When a failing connection attempt (`connection_failure`) is due to be reported.
        var connectionFailsAt: Double?
    }

    func listening() -> Listening {
        lock.withLock {
            let alive = connection != nil && powered && !silenced
            return Listening(
                scan: controller.scan, deliver: alive && controller.scan.enabled,
                connectTo: alive && controller.pendingConnection?.failsAt == nil ? controller.pendingConnection?.peer : nil,
                hasConnections: !controller.connections.isEmpty || controller.pendingConnection?.failsAt != nil,
                connectionFailsAt: controller.pendingConnection?.failsAt)
        }
    }

    /// The radio heard `peer` advertising connectably while a connection to it was pending.
    func establish(peer: BDAddress, deviceName: String, phase: Double, now: Double) {
        lock.lock()
        defer { lock.unlock() }
        guard let connection, powered, controller.pendingConnection?.peer == peer else { return }
        if failingConnections {
            controller.startFailingConnection(now: now)
            return
        }
        let events = controller.establish(deviceName: deviceName, phase: phase, now: now)
        _stats.connectionsEstablished += 1
        if !events.isEmpty { _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false) }
    }

    /// Per radio batch: refreshes each link's RSSI (`rssi` returns nil when the peer is out of
    /// range), drops links past their supervision timeout, and sends due notifications (one a second).
    func connectionTick(now: Double, rssi: (BDAddress) -> Double?) {
        lock.lock()
        defer { lock.unlock() }
        guard let connection, powered else { return }
        let (failed, failure) = controller.failDueConnection(now: now)
        if failed { _stats.connectionsFailed += 1 }
        if !failure.isEmpty { _ = connection.enqueue(failure.flatMap { $0 }, dropIfFull: false) }
        var out: [UInt8] = []
        for h in controller.connections.keys.sorted() {
            var c = controller.connections[h]!
            if let r = rssi(c.peer), !silenced {
                c.rssi = Int8(clamping: Int(r.rounded()))
                c.lastHeard = now
            } else if now - c.lastHeard > Double(c.supervisionTimeout) * 0.010 {
                controller.connections[h] = nil
                _stats.supervisionTimeouts += 1
                if controller.eventMask & (1 << 4) != 0 {
                    out += SimEvents.disconnectionComplete(handle: h, reason: SimReason.connectionTimeout)
                }
                continue
            }
            if now >= c.nextNotification {
                if now - c.lastHeard < 0.5 {
                    for n in c.gatt.notifications(at: now) { out += SimEvents.attACL(handle: h, n) }
                }
                c.nextNotification = now + 1
            }
            controller.connections[h] = c
        }
        if !out.isEmpty { _ = connection.enqueue(out, dropIfFull: true) }
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

    func setConnectionFailure(_ on: Bool) { lock.withLock { failingConnections = on } }

    /// `buffer_exhaustion` starts or ends; at the end the held packets go out and their credits return.
    func setBufferExhaustion(_ on: Bool) {
        lock.lock()
        defer { lock.unlock() }
        holdingCredits = on
        guard !on else { return }
        let events = controller.releaseACL(now: clock.now().seconds)
        if powered, let connection, !events.isEmpty { _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false) }
    }
}
