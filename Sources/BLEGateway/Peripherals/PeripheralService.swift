import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Keeps the configured peripherals connected, runs GATT on every link, and reports it all.
///
/// The policy is `ConnectionManager`'s (a pure state machine, under one lock); this type carries out its actions
/// through the link maker of the current session and feeds back what came of them: the controller's HCI commands in
/// exclusive mode (`serve(controller:info:)`, started and cancelled by the adapter's owner), kernel L2CAP sockets in
/// shared mode (`serve(kernelAdapter:)`). The GATT work is the same either way, over the link's `ATTBearer`. Intents and their statuses outlive sessions: after a reset, a power cycle or an
/// unplug every link is reported gone (`adapter lost`) and made again on the next session.
public final class PeripheralService: ControllerRole, @unchecked Sendable {
    /// Where the service's observations go (the runtime turns them into readings).
    public struct Output: Sendable {
        public var state: @Sendable (BDAddress, String?, ConnectionManager.Status) -> Void
        public var rssi: @Sendable (BDAddress, Int8) -> Void
        /// A characteristic value: service, characteristic, bytes, and how it came (notification, indication, read).
        public var value: @Sendable (BDAddress, BluetoothUUID?, BluetoothUUID, [UInt8], String) -> Void
        /// The discovered database and the ATT_MTU.
        public var gatt: @Sendable (BDAddress, Int, GATTDatabase) -> Void
        /// Another gateway owns the peripheral (docs/PERIPHERALS.md, "One owner per peripheral"): name, owner.
        public var standby: @Sendable (BDAddress, String?, String) -> Void
        public init(
            state: @escaping @Sendable (BDAddress, String?, ConnectionManager.Status) -> Void,
            rssi: @escaping @Sendable (BDAddress, Int8) -> Void,
            value: @escaping @Sendable (BDAddress, BluetoothUUID?, BluetoothUUID, [UInt8], String) -> Void,
            gatt: @escaping @Sendable (BDAddress, Int, GATTDatabase) -> Void,
            standby: @escaping @Sendable (BDAddress, String?, String) -> Void = { _, _, _ in }
        ) {
            self.state = state
            self.rssi = rssi
            self.value = value
            self.gatt = gatt
            self.standby = standby
        }
    }

    /// Counters for the health topic.
    public struct Statistics: Sendable, Hashable {
        public var connections = ConnectionManager.Counters()
        public var connected = 0
        public var values = 0
        public var droppedValues = 0
        public var attTimeouts = 0
        public var writes = 0
        public var refusedWrites = 0
        /// Devices matched by name or service let go because `connections.max_matched` were already wanted.
        public var evictedMatches = 0
    }

    /// One link's GATT side.
    final class Link: @unchecked Sendable {
        let handle: UInt16
        let peer: ConnectionManager.Peer
        let intent: PeripheralIntent
        let client: GATTClient
        /// Set by the link's GATT task, read by write commands.
        let database = Locked<GATTDatabase?>(nil)
        var task: Task<Void, Never>?
        init(handle: UInt16, peer: ConnectionManager.Peer, intent: PeripheralIntent, client: GATTClient) {
            self.handle = handle
            self.peer = peer
            self.intent = intent
            self.client = client
        }
    }

    /// What exists while a session (a controller served, or the kernel's links) lasts.
    final class Session: @unchecked Sendable {
        let maker: any PeripheralLinkMaker
        let actions: AsyncStream<ConnectionManager.Action>.Continuation
        /// Links by handle: written by the action loop, read by write commands.
        let gatt = Locked<[UInt16: Link]>([:])
        init(maker: any PeripheralLinkMaker, actions: AsyncStream<ConnectionManager.Action>.Continuation) {
            self.maker = maker
            self.actions = actions
        }
    }

    let clock: any BLEClock
    let logger: Logger
    /// In force now (a remote document may replace it): read when a link starts and by its RSSI loop.
    var connections: GatewayConfiguration.Connections { books.withLock { $0.connections } }
    let output: Output
    /// What the service's tasks share (`Books`), under one lock.
    let books: Locked<Books>
    /// Signalled after every event the manager handled: `linksEnded` waits on it rather than looking on a timer.
    private let managerChanged = WakeSignal()
    /// Signalled after every event the manager handled too, for the one task that sleeps until the manager's next
    /// deadline: an event may bring that deadline nearer (a WakeSignal has one waiter, hence two signals).
    private let deadlineMayHaveMoved = WakeSignal()
    private let serving = AsyncGate()

    /// Everything a sighting, a remote update, an ownership change and the action loop share. One lock for all of
    /// it: each sees and changes it in one step (a sighting takes it once), and no path takes two locks.
    struct Books: Sendable {
        var connections: GatewayConfiguration.Connections
        var manager: ConnectionManager
        var intents: [PeripheralIntent]
        /// Devices taken by a name-prefix or service intent: address → index in `intents`.
        var matched: [BDAddress: Int] = [:]
        var session: Session?
        var stats = Statistics()
        /// Set when peripherals have one owner across the fleet (`connections.owner_lease_s`): address intents are
        /// then connected only when owned.
        var ownership: Owned?
        /// Kernel link ids, unique for the service's life (across sessions).
        var kernelLinkIDs = LinkIDs()

        func intent(for address: BDAddress) -> PeripheralIntent? {
            if let i = intents.first(where: { $0.match == .address(address) }) { return i }
            if let i = matched[address], i < intents.count { return intents[i] }
            return nil
        }
    }

    public init(
        intents: [PeripheralIntent], connections: GatewayConfiguration.Connections, clock: any BLEClock,
        logger: Logger, output: Output
    ) {
        self.clock = clock
        self.logger = logger
        self.output = output
        books = Locked(
            Books(
                connections: connections,
                manager: ConnectionManager(configuration: Self.managerConfiguration(connections)), intents: intents))
    }

    /// Wants every address intent, publishing each `disconnected`: at start, this corrects whatever state an
    /// earlier run left retained. Devices matched by name or service are wanted when first heard.
    public func announce() {
        let (coordinated, intents) = books.withLock { ($0.ownership != nil, $0.intents) }
        for intent in intents {
            if case .address(let a) = intent.match {
                if coordinated {
                    // Not wanted until owned; still reported disconnected now.
                    output.state(
                        a, intent.name, .init(state: .disconnected, reason: nil, attempts: 0, since: clock.now()))
                } else {
                    post(.want(.init(address: a, addressType: intent.addressType ?? .public)))
                }
            }
        }
    }

    public var statistics: Statistics {
        var (s, live) = books.withLock { b in
            var s = b.stats
            s.connections = b.manager.counters
            s.connected = b.manager.statuses.values.filter { $0.state == .connected }.count
            return (s, b.session)
        }
        // Live links' drops: the GATT client's (its reader behind) and the bearers' (the GATT client behind).
        if let live {
            s.droppedValues += live.gatt.withLock { $0.values.reduce(0) { $0 + $1.client.statistics.droppedEvents } }
            s.droppedValues += live.maker.droppedPDUs
        }
        return s
    }

    /// Every peer's status, for tests and the health topic.
    public var statuses: [BDAddress: ConnectionManager.Status] { books.withLock { $0.manager.statuses } }

    // MARK: - Input

    /// Every sighting, before the scan filter: a connectable advertisement of a wanted device is the moment to
    /// connect; a name or service that matches an intent makes the device wanted.
    public func observe(_ s: Sighting) {
        // One look at the books: the owner's hooks for an owned-by-address device, whether the manager knows the
        // device, and the intents to match it against when it does not.
        let (owned, known, list) = books.withLock { b -> (Owned?, Bool, [PeripheralIntent]) in
            let coordinated = b.ownership.flatMap { o in
                b.intents.contains { $0.match == .address(s.address) } ? o : nil
            }
            return (coordinated, b.manager.status(of: s.address) != nil, b.intents)
        }
        if let o = owned {
            if let rssi = s.rssi { o.hooks.heard(s.address, Double(rssi)) }
            // Wanted by `take` once owned; a sighting of a device another gateway owns changes nothing here.
            guard o.owned.contains(s.address) else { return }
        }
        let peer = ConnectionManager.Peer(address: s.address, addressType: s.addressType)
        if !known {
            guard let i = list.firstIndex(where: { $0.matches(s) }) else { return }
            if case .address = list[i].match {
            } else {
                guard admitMatch(s.address, intent: i) else { return }
            }
            post(.want(peer))
        }
        if s.isConnectable { post(.advertised(peer)) }
    }

    /// A device a name or service intent matched joins the wanted ones within `connections.max_matched`: beyond it the
    /// matched device that has been without a link longest is let go (counted). False when every matched device is
    /// linked or being linked: the newcomer waits for a later advertisement.
    private func admitMatch(_ address: BDAddress, intent: Int) -> Bool {
        enum Admission {
            case admitted
            case evicting(BDAddress)
            case refused
        }
        let admission = books.withLock { b -> Admission in
            let bound = b.connections.maxMatched
            let statuses = b.manager.statuses
            guard b.matched.count >= bound else {
                b.matched[address] = intent
                return .admitted
            }
            let idle = b.matched.keys.filter { a in
                guard let st = statuses[a] else { return true }
                return st.state == .disconnected
            }
            guard
                let oldest = idle.min(by: {
                    (statuses[$0]?.since ?? .zero, $0.rawValue) < (statuses[$1]?.since ?? .zero, $1.rawValue)
                })
            else { return .refused }
            b.matched[oldest] = nil
            b.matched[address] = intent
            b.stats.evictedMatches += 1
            return .evicting(oldest)
        }
        switch admission {
        case .admitted: return true
        case .refused: return false
        case .evicting(let victim):
            post(.unwant(victim))
            return true
        }
    }

    /// Replaces the intents (a remote configuration applied): new ones are wanted, removed ones let go.
    public func update(
        intents newIntents: [PeripheralIntent], connections newConnections: GatewayConfiguration.Connections
    ) {
        let (old, statuses, oldMatched) = books.withLock { b in
            if newConnections != b.connections {
                b.connections = newConnections
                b.manager.configuration = Self.managerConfiguration(newConnections)
            }
            defer { b.intents = newIntents }
            return (b.intents, b.manager.statuses, b.matched)
        }
        deadlineMayHaveMoved.signal()  // a new connect timeout or backoff bound
        guard old != newIntents else { return }
        let addresses = Set(
            newIntents.compactMap { i -> BDAddress? in
                if case .address(let a) = i.match { return a } else { return nil }
            })
        var newMatched: [BDAddress: Int] = [:]
        for (address, status) in statuses {
            let before: PeripheralIntent? =
                old.first { $0.match == .address(address) }
                ?? oldMatched[address].flatMap { $0 < old.count ? old[$0] : nil }
            let after: PeripheralIntent?
            if addresses.contains(address) {
                after = newIntents.first { $0.match == .address(address) }
            } else if let b = before, let i = newIntents.firstIndex(where: { $0.match == b.match }) {
                // Still taken by the same name or service match.
                newMatched[address] = i
                after = newIntents[i]
            } else {
                after = nil
            }
            if after == nil {
                post(.unwant(address))
            } else if after != before, status.state == .connected, let h = status.handle {
                // New subscriptions, reads or permissions: the link is made again so its GATT work starts afresh.
                post(.drop(handle: h, why: "configuration changed"))
            }
        }
        books.withLock { $0.matched = newMatched }
        for a in addresses {
            let type = newIntents.first { $0.match == .address(a) }?.addressType ?? .public
            post(.want(.init(address: a, addressType: type)))
        }
    }

    static func managerConfiguration(_ connections: GatewayConfiguration.Connections) -> ConnectionManager.Configuration
    {
        var c = ConnectionManager.Configuration()
        c.maxConnections = connections.max
        c.connectTimeout = .seconds(connections.connectTimeoutSeconds)
        c.maxBackoff = .seconds(connections.maxBackoffSeconds)
        return c
    }

    func intent(for address: BDAddress) -> PeripheralIntent? { books.withLock { $0.intent(for: address) } }

    /// Two adapters: the links move to the other controller. Each is ended by the gateway (Disconnect 0x13) and
    /// reported `disconnected` "handed over to the other adapter"; waits up to `limit` for the controller to confirm.
    /// The next session (the other controller's `serve`) makes them again, without backoff.
    public func handOver() async {
        // Only a session that is up has links to hand over (one cancelled before it came up has none).
        guard books.withLock({ $0.session }) != nil else { return }
        post(.handOver)
        // An attempt in flight too: its Cancel must be answered here, or the link could be made on this controller
        // after its role has stopped listening.
        await linksEnded(within: .seconds(2), orAttempts: true)
    }

    /// A graceful stop, before the adapter's session ends: every link is ended by the gateway (Disconnect 0x15)
    /// and reported `disconnected` with the reason "the gateway stopped"; waits up to `limit` for the controller
    /// to confirm. No new attempt is made after this.
    public func stop(limit: Duration = .seconds(2)) async {
        post(.shutdown)
        await linksEnded(within: limit)
    }

    /// Waits until no link is up or ending (nor being made, with `orAttempts`), or `limit` passed.
    private func linksEnded(within limit: Duration, orAttempts: Bool = false) async {
        let deadline = clock.now() + limit
        let busy: Set<ConnectionManager.LinkState> =
            orAttempts
            ? [.connected, .disconnecting, .connecting]
            : [.connected, .disconnecting]
        while clock.now() < deadline, !Task.isCancelled,
            books.withLock({ b in b.manager.statuses.values.contains { busy.contains($0.state) } })
        {
            await managerChanged.wait(upTo: deadline - clock.now(), clock: clock)
        }
    }

    // MARK: - The state machine and its actions

    func post(_ event: ConnectionManager.Event) {
        let now = clock.now()
        let (actions, current) = books.withLock { b in (b.manager.handle(event, now: now), b.session) }
        managerChanged.signal()
        deadlineMayHaveMoved.signal()
        guard !actions.isEmpty else { return }
        for action in actions {
            if case .publish(let address, let status) = action {
                let (name, standbyFor) = books.withLock { b in
                    (b.intent(for: address)?.name, b.ownership?.standby[address])
                }
                if status.state == .disconnected, let owner = standbyFor {
                    // Let go for its owner: that is what it is now.
                    output.standby(address, name, owner)
                    continue
                }
                if status.state == .connected || status.reason != nil {
                    let label = name.map { " (\($0))" } ?? ""
                    let why = status.reason.map { " — \($0)" } ?? ""
                    logger.info("peripheral \(address)\(label): \(status.state)\(why) (attempt \(status.attempts))")
                }
                output.state(address, name, status)
            } else {
                current?.actions.yield(action)
            }
        }
    }

    public func serve(controller: HCIController, info: ControllerInfo) async {
        await serve(
            HCILinkMaker(controller: controller, info: info, clock: clock, logger: logger) { [self] in post($0) })
    }

    /// Shared mode: links through the kernel's L2CAP sockets on `adapter` ("hci0"), until cancelled.
    public func serve(kernelAdapter adapter: String) async {
        // The manager cancels an attempt after its connect timeout; the socket's own deadline is only a backstop.
        let timeout = Duration.seconds(connections.connectTimeoutSeconds) + .seconds(5)
        await serve(
            KernelLinkMaker(
                adapter: adapter, clock: clock, logger: logger, connectTimeout: timeout,
                nextID: { [books] in books.withLock { $0.kernelLinkIDs.next() } }
            ) { [self] in post($0) })
    }

    func serve(_ maker: any PeripheralLinkMaker) async {
        // One session at a time: with two adapters the role moves between controllers, and the one that was lost
        // may still be unwinding (its links reported gone) when the other starts.
        await serving.withGate {
            guard !Task.isCancelled else { return }
            await serveSession(maker)
        }
    }

    private func serveSession(_ maker: any PeripheralLinkMaker) async {
        let (actions, continuation) = AsyncStream.makeStream(of: ConnectionManager.Action.self)
        let s = Session(maker: maker, actions: continuation)
        books.withLock { $0.session = s }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await maker.run() }
            group.addTask { [self] in
                for await action in actions { await perform(action, in: s) }
            }
            group.addTask { [self] in
                // The manager's timers: asleep until its next deadline (a connect attempt's timeout, a backoff's end),
                // or until an event may have brought that nearer; with no deadline, until an event.
                while !Task.isCancelled {
                    let now = clock.now()
                    guard let next = books.withLock({ $0.manager.nextDeadline }) else {
                        await deadlineMayHaveMoved.wait()
                        continue
                    }
                    if next > now {
                        await deadlineMayHaveMoved.wait(upTo: next - now, clock: clock)
                        if clock.now() < next { continue }
                    }
                    post(.tick)
                }
            }
            // The maker's listeners were subscribed when it was made (LELinks at init; the kernel maker's jobs are
            // queued until `run` takes them), so actions may be taken at once.
            post(.adapterUp)
            books.withLock { $0.ownership }?.hooks.adapter(true)
            // The first to end (the link layer's end, or cancellation by the adapter's owner) ends the session.
            await group.next()
            group.cancelAll()
        }
        continuation.finish()
        let owned = books.withLock { b -> Owned? in
            b.session = nil
            return b.ownership
        }
        owned?.hooks.adapter(false)
        for link in s.gatt.withLock({ Array($0.values) }) {
            link.task?.cancel()
            await link.task?.value
            keepDrops(of: link)
        }
        post(.adapterDown)
    }

    func perform(_ action: ConnectionManager.Action, in s: Session) async {
        switch action {
        case .createConnection(let peer, let parameters):
            await s.maker.connect(peer, parameters: parameters)
        case .cancelCreateConnection:
            await s.maker.cancelConnect()
        case .disconnect(let handle, let reason):
            await s.maker.disconnect(handle, reason: reason)
        case .linkUp(let handle, let peer):
            guard let intent = intent(for: peer.address), let bearer = s.maker.bearer(for: handle) else { return }
            let client = GATTClient(
                bearer: bearer, clock: clock, requestTimeout: .seconds(connections.attTimeoutSeconds),
                logger: logger)
            let link = Link(handle: handle, peer: peer, intent: intent, client: client)
            s.gatt.withLock { $0[handle] = link }
            link.task = Task { await self.run(link, maker: s.maker) }
        case .linkDown(let handle, _):
            let link = s.gatt.withLock { $0.removeValue(forKey: handle) }
            link?.task?.cancel()
            if let link { keepDrops(of: link) }
        case .publish:
            break
        }
    }

    /// Values a link's GATT client dropped (its reader fell behind), kept past the link's end; `statistics` counts
    /// the live links' itself.
    func keepDrops(of link: Link) {
        let dropped = link.client.statistics.droppedEvents
        books.withLock { $0.stats.droppedValues += dropped }
    }

}

extension GATTDatabase {
    /// The first characteristic with the UUID, within the named service when there is one.
    func find(_ ref: PeripheralIntent.CharacteristicRef) -> (GATTService, GATTCharacteristic)? {
        for service in services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristics.first(where: { $0.uuid == ref.characteristic }) { return (service, c) }
        }
        return nil
    }

    /// The service and characteristic a value handle belongs to.
    func owner(ofValueHandle handle: UInt16) -> (GATTService, GATTCharacteristic)? {
        for service in services where (service.startHandle...service.endHandle).contains(handle) {
            if let c = service.characteristics.first(where: { $0.valueHandle == handle }) { return (service, c) }
        }
        return nil
    }
}
