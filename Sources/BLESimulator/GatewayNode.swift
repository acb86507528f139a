import BLEHCI
import BLETransport
import Foundation

/// Counters for one virtual controller, for logs, tests and the benchmark.
public struct GatewayStats: Sendable, Hashable {
    public var connectionsAccepted = 0
    public var commands = 0
    public var unknownCommands = 0
    /// Commands refused by a `command_errors` or `le_unsupported` fault.
    public var commandsRefused = 0
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
    /// Handle Value Notifications sent on links, and those lost because the host was reading too
    /// slowly (`flood`). Indications are never dropped; each link's `gatt.indicationsSent` counts them.
    public var notificationsSent = 0
    public var notificationsDropped = 0
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
    private var gattSilence = GATTSilence()
    private var _stats = GatewayStats()

    init(spec: GatewaySpec, clock: any BLEClock) {
        self.spec = spec
        self.clock = clock
        self.controller = VirtualController(address: spec.address)
        controller.maxConnections = spec.maxConnections
    }

    /// The controller's links as they stand (tests read what the peers recorded).
    public var links: [SimConnection] {
        lock.withLock { controller.connections.keys.sorted().map { controller.connections[$0]! } }
    }

    /// The user of each phone waiting in Passkey Entry types `passkey` (a test reads it from the gateway's display).
    public func typePasskey(_ passkey: UInt32) {
        lock.withLock {
            guard let connection, powered else { return }
            let events = controller.typePasskey(passkey)
            if !events.isEmpty { _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false) }
        }
    }

    /// Every phone pairing this controller has seen, ended ones first.
    public var pairings: [SimPhonePairing] {
        lock.withLock {
            controller.endedPairings
                + controller.connections.keys.sorted().compactMap { controller.connections[$0]!.phone }
        }
    }

    public func link(_ handle: UInt16) -> SimConnection? { lock.withLock { controller.connections[handle & 0x0FFF] } }

    public var stats: GatewayStats { lock.withLock { _stats } }
    /// What the host set up for advertising (the peripheral's side: enrolment).
    public var advertising: SimAdvertising { lock.withLock { controller.advertising } }
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
                packet.payload, now: clock.now().seconds, holdCredits: holdingCredits, silence: gattSilence)
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
        let before = (controller.unknownCommands, controller.commandsRefused)
        let events = controller.handle(command: packet.payload, now: clock.now())
        _stats.unknownCommands += controller.unknownCommands - before.0
        _stats.commandsRefused += controller.commandsRefused - before.1
        if conn.enqueueResponse(events) { _stats.commandsWithoutCredit += 1 }
    }

    /// What the radio needs to know to deliver reports to this gateway now.
    struct Listening {
        var scan: ScanState
        var deliver: Bool
        /// A pending LE Create Connection (its peer, or the Filter Accept List), while the radio can hear.
        var connectTo: PendingConnection?
        /// The Filter Accept List, for a scan whose filter policy uses it.
        var acceptList: Set<SimAcceptListEntry>
        /// The earliest time a link has something to send (notification, indication, database change).
        var linkDue: Double?
        /// Links to tick, or a failing attempt waiting for its deadline.
        var hasConnections: Bool
        /// When a failing connection attempt (`connection_failure`) is due to be reported.
        var connectionFailsAt: Double?
        /// The host advertises connectably (enrolment): a phone in range that wants to pair connects.
        var advertisingConnectable = false
        /// Which advertising session this is (each enable), for the phone's keys.
        var advertisingSession: UInt64 = 0
    }

    func listening() -> Listening {
        lock.withLock {
            let alive = connection != nil && powered && !silenced
            return Listening(
                scan: controller.scan, deliver: alive && controller.scan.enabled,
                connectTo: alive && controller.pendingConnection?.failsAt == nil ? controller.pendingConnection : nil,
                acceptList: controller.acceptList,
                linkDue: controller.connections.values.compactMap { c -> Double? in
                    let change = c.gatt.grown ? nil : c.behaviour.gattChangeAt
                    return min(c.nextNotification, change ?? .infinity)
                }.min(),
                hasConnections: !controller.connections.isEmpty || controller.pendingConnection?.failsAt != nil,
                connectionFailsAt: controller.pendingConnection?.failsAt,
                advertisingConnectable: alive && controller.advertising.connectable,
                advertisingSession: controller.advertising.sessions)
        }
    }

    /// A phone heard this gateway's connectable advertising and connects to pair (the gateway is the peripheral).
    /// Returns whether the link came up.
    @discardableResult
    func acceptCentral(phone: PhoneSpec, identity: BDAddress, address: BDAddress, seed: [UInt8], now: Double) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let connection, powered, !silenced else { return false }
        let events = controller.acceptCentral(phone: phone, identity: identity, address: address, seed: seed, now: now)
        guard !events.isEmpty else { return false }
        _stats.connectionsEstablished += 1
        _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false)
        return true
    }

    /// The radio heard `peer` advertising connectably while a connection to it (or, with
    /// Initiator_Filter_Policy 1, to any device on the Filter Accept List) was pending. Returns
    /// whether the attempt is settled (connected, or failing under `connection_failure`).
    @discardableResult
    func establish(
        peer: BDAddress, addressType: UInt8, deviceName: String, phase: Double, behaviour: PeripheralLinkSpec,
        now: Double
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let connection, powered, let pending = controller.pendingConnection,
            pending.targets(peer, type: addressType),
            !controller.connections.values.contains(where: { $0.peer == peer })
        else { return false }
        if failingConnections {
            controller.startFailingConnection(now: now)
            return true
        }
        let events = controller.establish(
            peer: peer, addressType: addressType, deviceName: deviceName, phase: phase, behaviour: behaviour, now: now)
        _stats.connectionsEstablished += 1
        if !events.isEmpty { _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false) }
        return true
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
        var stream: [UInt8] = []
        var notifications = 0
        var perLink: [UInt16: Int] = [:]
        for h in controller.connections.keys.sorted() {
            var c = controller.connections[h]!
            if let r = rssi(c.radioAddress ?? c.peer), !silenced {
                c.rssi = Int8(clamping: Int(r.rounded()))
                c.lastHeard = now
            } else if now - c.lastHeard > Double(c.supervisionTimeout) * 0.010 {
                controller.connections[h] = nil
                if let phone = c.phone { controller.endedPairings.append(phone) }
                _stats.supervisionTimeouts += 1
                if controller.eventMask & (1 << 4) != 0 {
                    out += SimEvents.disconnectionComplete(handle: h, reason: SimReason.connectionTimeout)
                }
                continue
            }
            let inRange = now - c.lastHeard < 0.5
            if let at = c.behaviour.gattChangeAt, now >= at { c.gatt.grow() }
            // A microsecond of slack: due times are sums of Doubles, the clock's ticks another sum.
            if now + 1e-6 >= c.nextNotification {
                let interval = Double(c.interval) * 0.00125
                // `flood`: every connection event since the last tick carries `floodPerEvent`
                // notifications per subscribed characteristic (at most 8,000 events per tick).
                let events = c.behaviour.flood ? min(8000, Int((now - c.nextNotification) / interval + 1e-6) + 1) : 1
                if inRange {
                    let copies = c.behaviour.flood ? events * PeripheralLinkSpec.floodPerEvent : 1
                    let pdus = c.gatt.notifications(at: now)
                    for _ in 0..<copies where !pdus.isEmpty {
                        for n in pdus { stream += SimEvents.attACL(handle: h, n) }
                        notifications += pdus.count
                        perLink[h, default: 0] += pdus.count
                    }
                    c.gatt.queuePeriodicIndications()
                }
                // Flood keeps the connection events' phase; a periodic stream restarts from now.
                c.nextNotification =
                    c.behaviour.flood
                    ? max(c.nextNotification + Double(events) * interval, now + interval / 2)
                    : now + c.behaviour.notifyInterval
            }
            if inRange, let ind = c.gatt.nextIndication(at: now) {
                out += SimEvents.attACL(handle: h, ind)
            }
            controller.connections[h] = c
        }
        if !out.isEmpty { _ = connection.enqueue(out, dropIfFull: false) }
        if !stream.isEmpty {
            // Notifications are a stream a slow host loses, like reports; indications and events are not.
            if connection.enqueue(stream, dropIfFull: true) {
                _stats.notificationsSent += notifications
                for (h, n) in perLink { controller.connections[h]?.notificationsSent += n }
            } else {
                _stats.notificationsDropped += notifications
            }
        }
    }

    /// Hands encoded reports to the host. Returns false when the host is too far behind and the
    /// caller asked not to drop (free-running: the radio should wait and retry).
    func deliver(_ bytes: [UInt8], reports: Int, generation: UInt64, dropIfFull: Bool) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        // Scanning changed since the reports were made: a real controller would not have sent them.
        guard let connection, powered, !silenced, controller.scan.generation == generation, controller.scan.enabled
        else { return true }
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

    /// `command_errors` starts (the status every command is refused with) or ends (nil). What the host set before
    /// stays as it was: a scan enabled before keeps reporting.
    func setCommandErrors(_ status: SimStatus?) { lock.withLock { controller.faults.commandErrors = status } }

    /// `le_unsupported` starts or ends: as if the dongle were swapped for one with (or without) LE, the controller
    /// comes up from power-on defaults, its links ended silently.
    func setLEUnsupported(_ on: Bool) {
        lock.withLock {
            controller.faults.leUnsupported = on
            controller.reset()
        }
    }

    func setConnectionFailure(_ on: Bool) { lock.withLock { failingConnections = on } }

    /// `gatt_silence` for one peer, or (nil) for every peer of this gateway.
    func setGATTSilence(_ on: Bool, peer: BDAddress?) {
        lock.withLock {
            if let peer {
                if on { gattSilence.peers.insert(peer) } else { gattSilence.peers.remove(peer) }
            } else {
                gattSilence.all = on
            }
        }
    }

    /// `buffer_exhaustion` starts or ends; at the end the held packets go out and their credits return.
    func setBufferExhaustion(_ on: Bool) {
        lock.lock()
        defer { lock.unlock() }
        holdingCredits = on
        guard !on else { return }
        let events = controller.releaseACL(now: clock.now().seconds, silence: gattSilence)
        if powered, let connection, !events.isEmpty { _ = connection.enqueue(events.flatMap { $0 }, dropIfFull: false) }
    }
}
