import BLEPublishing
import BLETransport
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `blegateway fleet`: subscribes to `<prefix>/#`, folds everything into a `FleetModel`, records the plots'
/// history and serves the dashboard, its event streams and `/metrics`. Stateless across restarts apart from the
/// history: the retained topics rebuild the model. One `run()`; on graceful shutdown the pages' event streams end
/// first, then the HTTP server, then the subscription, the history and the broker connection (DISCONNECT).
public final class FleetService: Service, Sendable {
    public let configuration: FleetConfiguration
    /// The model the broker's messages build, and the service's own connection to the broker as the pages show it,
    /// under one lock: a page is drawn from one moment of both.
    let books: Locked<Books>
    struct Books: Sendable {
        var model: FleetModel
        var broker: FleetViews.BrokerState
    }
    let changes = ChangeBroadcast()
    let history: FleetHistory?
    let clock: any BLEClock
    let logger: Logger
    let client: MQTTClient
    let presence: Locked<FleetPresence>
    /// Which of the site's fleet services publishes (FleetLease): only the active one writes presence, rooms, their
    /// Home Assistant documents and the service's online status; a standby folds everything the same and stays quiet.
    let lease: Locked<FleetLease>
    /// Signalled after every lease event: the deadline the lease asks for may have moved (`keepLease` sleeps to it).
    private let leaseChanged = WakeSignal()
    private let onListening: @Sendable (Int) async -> Void

    /// - Parameters:
    ///   - onListening: called with the bound port once the dashboard accepts connections.
    public init(
        configuration: FleetConfiguration, clock: any BLEClock = SystemClock(), logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        self.configuration = configuration
        self.books = Locked(
            Books(
                model: FleetModel(sites: configuration.sites),
                broker: FleetViews.BrokerState(url: configuration.brokerURL, instance: configuration.instance)))
        self.history = try configuration.historyPath.map {
            try FleetHistory(path: $0, retentionS: configuration.historyRetentionS)
        }
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
        var mqtt = configuration.mqtt
        // The broker says offline, retained, when the service goes without a DISCONNECT (killed, cut off).
        mqtt.will = .init(
            topic: FleetPresence.statusTopic(configuration.prefix), payload: FleetPresence.statusPayload(online: false))
        self.client = MQTTClient(configuration: mqtt, clock: clock)
        self.presence = Locked(FleetPresence(sites: configuration.sites, configured: configuration.site))
        self.lease = Locked(
            FleetLease(
                instance: configuration.instance, settings: configuration.lease,
                firstSerial: UInt64.random(in: 1...(UInt64.max >> 1))))
    }

    public func run() async throws {
        let client = self.client
        // One subscription per site, each folded by its own task into the one model (the broker filters: a service
        // never receives another site's topics).
        let streams = try configuration.sites.map {
            try client.subscribe("\($0)/#", qos: .atLeastOnce, buffer: configuration.receiveBuffer)
        }
        // Home Assistant says `online` when it (re)starts: its entities are announced again then.
        let homeAssistant = try configuration.homeAssistantDiscoveryPrefix.map {
            try client.subscribe("\($0)/status", qos: .atLeastOnce, buffer: 16)
        }
        let app = Application(
            router: FleetRoutes.router(self),
            configuration: .init(
                address: .hostname(configuration.listenHost, port: configuration.listenPort),
                serverName: "blegateway-fleet"),
            onServerRunning: { [onListening] channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        defer { changes.finish() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            for messages in streams { group.addTask { await self.ingest(messages) } }
            group.addTask { await self.follow(client.events) }
            group.addTask { try await self.recordHistory() }
            group.addTask { try await self.publishPresence() }
            group.addTask { try await self.keepLease() }
            if let homeAssistant { group.addTask { await self.followHomeAssistant(homeAssistant) } }
            group.addTask {
                // On graceful shutdown the server stops accepting and waits for the requests in flight: end the
                // pages' event streams first, so none holds it open. Then everything else is cancelled, in turn.
                try await withGracefulShutdownHandler {
                    try await app.run()
                } onGracefulShutdown: {
                    self.changes.finish()
                }
            }
            // Whichever ends first (the server after a graceful shutdown, or a part that failed) ends them all. The
            // active instance clears the lease (the standby takes over at once) and says offline, retained, since a
            // clean DISCONNECT does not set off the last will (MQTT 5 §3.1.2.5); a standby says nothing.
            try await group.next()
            for action in lease.withLock({ $0.stop() }) {
                if case .release = action {
                    await releaseLease()
                } else {
                    lease.withLock { _ in perform(action) }
                }
            }
            group.cancelAll()
        }
    }

    func ingest(_ messages: AsyncStream<MQTTMessage>) async {
        let ownStatus = FleetPresence.statusTopic(configuration.prefix)
        let leaseTopic = FleetLease.topic(configuration.prefix)
        for await m in messages {
            if m.topic == leaseTopic {
                leaseEvent { [now = seconds()] in $0.received(m.payload, now: now) }
                continue
            }
            if m.topic == ownStatus {
                // Another instance's last will (a standby that died), or this one's from before a reconnection: the
                // active instance is alive, and says so again.
                if m.payload != FleetPresence.statusPayload(online: true), lease.withLock({ $0.isActive }) {
                    publishStatus()
                }
                continue
            }
            let now = clock.unixTime()
            let (parsed, beacon) = books.withLock {
                books -> ((site: String, topic: FleetTopic)?, FleetGateway.Beacon?) in
                // In place: a copy of the model would copy its tables at every message.
                let parsed = books.model.receive(topic: m.topic, payload: m.payload, retained: m.retain, now: now)
                // The reading just folded (not an older one left by a payload that did not parse).
                guard case .beacon(let gw, let id)? = parsed?.topic, let g = books.model.gateways[gw],
                    g.site == parsed?.site,
                    let b = g.beacons[id], b.receivedAt == now
                else { return (parsed, nil) }
                return (parsed, b)
            }
            if let parsed {
                if let beacon, case .beacon(let gw, let id) = parsed.topic {
                    presence.withLock { $0.observe(parsed.site, gateway: gw, beacon: id, reading: beacon, now: now) }
                } else if case .notFromAGateway = parsed.topic, m.topic == FleetPresence.siteTopic(parsed.site) {
                    receiveSite(parsed.site, payload: m.payload)
                }
            }
            changes.changed()
        }
    }

    func follow(_ events: AsyncStream<MQTTEvent>) async {
        var everConnected = false
        for await e in events {
            let reconnected = everConnected
            books.withLock { books in
                switch e {
                case .connected:
                    if reconnected { books.broker.reconnects += 1 }
                    books.broker.connected = true
                    books.broker.lastError = nil
                case .connectionRefused(let error), .connectionFailed(let error):
                    books.broker.connected = false
                    books.broker.lastError = "\(error)"
                case .disconnected(let error):
                    books.broker.connected = false
                    books.broker.lastError = error.map { "\($0)" }
                case .connecting, .unacknowledged, .backingOff:
                    break
                }
            }
            if case .connected = e { everConnected = true }
            switch e {
            case .connected:
                logger.info("fleet: connected to \(configuration.brokerURL)")
                presence.withLock { $0.connected() }
                leaseEvent { [now = seconds()] in $0.connected(now: now) }
            case .disconnected, .connectionFailed, .connectionRefused:
                leaseEvent { [now = seconds()] in $0.disconnected(now: now) }
            case .connecting, .unacknowledged, .backingOff:
                break
            }
            changes.changed()
        }
    }

    /// The monotonic clock in seconds, as the lease counts.
    private func seconds() -> Double { clock.now() / .seconds(1) }

    /// Unix time with milliseconds, as the lease's log lines give it.
    static func stamp(_ unixTime: Double) -> String { String(format: "%.3f", unixTime) }

    /// One event into the lease, its actions carried out in the lease's order (under its lock: an activation and the
    /// deactivation that follows it never pass each other), and the deadline watcher woken.
    private func leaseEvent(_ event: (inout FleetLease) -> [FleetLease.Action]) {
        lease.withLock { lease in
            for action in event(&lease) { perform(action) }
        }
        leaseChanged.signal()
    }

    /// Carries out the deadlines the lease asks for (renewal, fence, a holder's lease running out); between them it
    /// sleeps until the next one or until an event moves it, so a standby with nothing due runs no timer.
    func keepLease() async throws {
        while true {
            try Task.checkCancellation()
            guard let deadline = lease.withLock({ $0.nextDeadline }) else {
                await leaseChanged.wait()
                continue
            }
            let now = seconds()
            if deadline > now {
                await leaseChanged.wait(upTo: .seconds(deadline - now), clock: clock)
                continue
            }
            leaseEvent { $0.deadline(now: now) }
        }
    }

    /// The active instance stops: the lease is cleared, so the standby takes over at once, and the status says
    /// offline, retained (a clean DISCONNECT does not set off the last will, MQTT 5 §3.1.2.5); both awaited.
    private func releaseLease() async {
        _ = try? await client.publish(
            MQTTMessage(topic: FleetLease.topic(configuration.prefix), payload: [], qos: .atLeastOnce, retain: true))
        _ = try? await client.publish(
            MQTTMessage(
                topic: FleetPresence.statusTopic(configuration.prefix),
                payload: FleetPresence.statusPayload(online: false), qos: .atLeastOnce, retain: true))
    }

    private func perform(_ action: FleetLease.Action) {
        let site = configuration.prefix
        switch action {
        case .claim(let claim):
            client.submit(
                MQTTMessage(topic: FleetLease.topic(site), payload: claim.payload, qos: .atLeastOnce, retain: true)
            ) { [logger] result in
                if case .failure(let e) = result { logger.warning("fleet: lease claim not published: \(e)") }
            }
        case .release:
            // Only stopping asks for it, and run() awaits it there (releaseLease) before the connection closes.
            assertionFailure("the lease asked for a release outside stop()")
        case .activate(let epoch):
            // The moment to the millisecond (the log's own stamp has seconds): two instances' logs order a handover.
            logger.notice(
                "fleet: \(configuration.instance) is the active instance for \(site) (lease epoch \(epoch), at \(Self.stamp(clock.unixTime())))"
            )
            publishStatus()
            // A standby followed everything: its rooms and tags are published whole once (the same as the retained ones
            // where both instances agreed, so no room changes twice), and their documents again.
            presence.withLock { $0.takeOver() }
        case .deactivate(let reason):
            logger.notice(
                "fleet: \(configuration.instance) stops publishing for \(site): \(reason) (at \(Self.stamp(clock.unixTime())))"
            )
        }
        changes.changed()
    }

    /// Online, retained, when this instance becomes the active one (and again over a last will): it replaces the
    /// last will's offline.
    private func publishStatus() {
        let message = MQTTMessage(
            topic: FleetPresence.statusTopic(configuration.prefix), payload: FleetPresence.statusPayload(online: true),
            qos: .atLeastOnce, retain: true)
        client.submit(message) { [logger] result in
            if case .failure(let e) = result { logger.warning("fleet: status not published: \(e)") }
        }
    }

    /// Every `FleetHistory.resolution` seconds: one point per series, and old beacons forgotten.
    func recordHistory() async throws {
        while true {
            try await clock.sleep(for: .seconds(FleetHistory.resolution))
            let now = clock.unixTime()
            let snapshot = books.withLock { b in
                b.model.forgetBeacons(olderThan: configuration.beaconTimeoutS, now: now)
                return b.model
            }
            do {
                try history?.record(snapshot, now: now)
            } catch {
                logger.error("fleet: history not recorded: \(error)")
            }
        }
    }

    func receiveSite(_ site: String, payload: [UInt8]) {
        let problem = presence.withLock {
            $0.receiveSite(site, payload: payload, isFirstSite: site == configuration.prefix)
        }
        if let problem {
            logger.error("fleet: site description refused, the one in force stays: \(problem)")
        } else {
            logger.info("fleet: site description for \(site)/ \(payload.isEmpty ? "removed" : "applied")")
        }
    }

    /// Once a second: every tag's room decided again; what changed is published retained on
    /// `<prefix>/fleet/presence/<beacon-id>` (and, with Home Assistant, a tag's discovery document first).
    func publishPresence() async throws {
        while true {
            try await clock.sleep(for: .seconds(1))
            let now = clock.unixTime()
            let active = lease.withLock { $0.isActive }
            let due = presence.withLock {
                p -> [(topic: String, payload: [UInt8], room: [UInt8], discovery: [UInt8]?, dtopics: [String])] in
                // A standby decides the same and publishes nothing: at a takeover its engine is where the active
                // one's was.
                let reports = p.tick(now: now)
                guard active else { return [] }
                return reports.compactMap { prefix, report in
                    guard let site = p.sites[prefix]?.engine.site else { return nil }
                    var discovery: [UInt8]?
                    var dtopics: [String] = []
                    if let dp = configuration.homeAssistantDiscoveryPrefix, p.announce(prefix, beacon: report.beacon) {
                        // The legacy document emptied first, then the new one (see PresenceDiscovery.legacyTopic).
                        dtopics = [
                            PresenceDiscovery.legacyTopic(discoveryPrefix: dp, beacon: report.beacon),
                            PresenceDiscovery.topic(discoveryPrefix: dp, prefix: prefix, beacon: report.beacon),
                        ]
                        discovery = PresenceDiscovery.document(
                            prefix: prefix, beacon: report.beacon,
                            status: FleetPresence.statusTopic(configuration.prefix),
                            name: site.tags[report.beacon]?.name)
                    }
                    return (
                        FleetPresence.presenceTopic(prefix, beacon: report.beacon),
                        PresencePayload.encode(report, site: site),
                        Array(FleetPresence.roomState(report, site: site).utf8),
                        discovery, dtopics
                    )
                }
            }
            for d in due {
                do {
                    if let doc = d.discovery, d.dtopics.count == 2 {
                        _ = try await client.publish(
                            MQTTMessage(topic: d.dtopics[0], payload: [], qos: .atLeastOnce, retain: true))
                        _ = try await client.publish(
                            MQTTMessage(topic: d.dtopics[1], payload: doc, qos: .atLeastOnce, retain: true))
                    }
                    _ = try await client.publish(
                        MQTTMessage(topic: d.topic, payload: d.payload, qos: .atLeastOnce, retain: true))
                    _ = try await client.publish(
                        MQTTMessage(
                            topic: d.topic + "/room", payload: d.room, qos: .atLeastOnce,
                            retain: true))
                } catch {
                    // A report not sent now is sent again within the engine's heartbeat (30 s); counted for the page.
                    presence.withLock { $0.notPublished += 1 }
                }
            }
            if !due.isEmpty { changes.changed() }
            await publishRooms()
        }
    }

    /// Each room whose occupancy changed, retained on `<prefix>/fleet/rooms/<room>`; with Home Assistant, its device
    /// document first when the site changed or Home Assistant came back; a removed room's topics emptied.
    func publishRooms() async {
        let active = lease.withLock { $0.isActive }
        let changes = presence.withLock { p -> [(FleetPresence.RoomChange, SiteDescription?)] in
            // A standby's changes go nowhere; at a takeover every room is published whole.
            guard active else {
                _ = p.takeRoomChanges()
                return []
            }
            return p.takeRoomChanges().map { change in (change, p.sites[change.prefix]?.engine.site) }
        }
        for (change, site) in changes {
            var messages: [MQTTMessage] = []
            if let dp = configuration.homeAssistantDiscoveryPrefix {
                for id in change.removed {
                    messages.append(
                        MQTTMessage(
                            topic: RoomOccupancy.discoveryTopic(discoveryPrefix: dp, prefix: change.prefix, room: id),
                            payload: [], qos: .atLeastOnce, retain: true))
                }
                for gateway in change.removedGateways {
                    messages.append(
                        MQTTMessage(
                            topic: GatewayAreaDiscovery.topic(
                                discoveryPrefix: dp, prefix: change.prefix, gateway: gateway),
                            payload: [], qos: .atLeastOnce, retain: true))
                }
                if change.announce, let site {
                    // Each placed gateway's device in its room's area.
                    for (id, gateway) in site.gateways.sorted(by: { $0.key < $1.key }) {
                        guard let room = site.room(gateway.room) else { continue }
                        messages.append(
                            MQTTMessage(
                                topic: GatewayAreaDiscovery.topic(
                                    discoveryPrefix: dp, prefix: change.prefix, gateway: id),
                                payload: GatewayAreaDiscovery.document(
                                    prefix: change.prefix, gateway: id, room: room,
                                    status: FleetPresence.statusTopic(configuration.prefix)),
                                qos: .atLeastOnce, retain: true))
                    }
                    for room in site.rooms where change.rooms.contains(where: { $0.id == room.id }) {
                        messages.append(
                            MQTTMessage(
                                topic: RoomOccupancy.discoveryTopic(
                                    discoveryPrefix: dp, prefix: change.prefix, room: room.id),
                                payload: RoomOccupancy.document(
                                    prefix: change.prefix, room: room,
                                    status: FleetPresence.statusTopic(configuration.prefix)),
                                qos: .atLeastOnce,
                                retain: true))
                    }
                }
            }
            for id in change.removed {
                messages.append(
                    MQTTMessage(
                        topic: RoomOccupancy.topic(change.prefix, room: id), payload: [], qos: .atLeastOnce,
                        retain: true))
            }
            for room in change.rooms {
                messages.append(
                    MQTTMessage(
                        topic: RoomOccupancy.topic(change.prefix, room: room.id), payload: RoomOccupancy.payload(room),
                        qos: .atLeastOnce, retain: true))
            }
            var lost = false
            for m in messages {
                do { _ = try await client.publish(m) } catch {
                    // Counted for the page; the site's rooms go again, whole, at the next connection.
                    lost = true
                    presence.withLock { $0.notPublished += 1 }
                }
            }
            if lost { presence.withLock { $0.roomsNotPublished(change) } }
        }
    }

    func followHomeAssistant(_ messages: AsyncStream<MQTTMessage>) async {
        for await m in messages where m.payload == Array("online".utf8) {
            presence.withLock { $0.forgetAnnouncements() }
        }
    }

    /// Draws a page from one moment of the model and the broker connection (with the service's own losses, a
    /// counter the client keeps, read just before).
    private func drawn<Page>(_ draw: (FleetModel, FleetViews.BrokerState) -> Page) -> Page {
        let dropped = client.droppedDeliveries
        // The standing on the lease is read from the lease itself, never kept beside it: an instance that starts as a
        // standby reaches that state without an action, and a copy made at actions said "starting" for ever.
        let standing = lease.withLock { FleetViews.LeaseStanding($0) }
        return books.withLock { books in
            var broker = books.broker
            broker.droppedMessages = dropped
            (broker.role, broker.activeInstance, broker.lease) = (
                standing.role, standing.activeInstance, standing.counters
            )
            return draw(books.model, broker)
        }
    }

    // Views for the routes.
    func overview() -> FleetViews.Overview {
        let now = clock.unixTime()
        return drawn { FleetViews.overview($0, broker: $1, now: now) }
    }

    func gatewayPage(_ id: String) -> FleetViews.GatewayPage {
        let now = clock.unixTime()
        return drawn { FleetViews.gateway($0, id: id, broker: $1, now: now) }
    }

    func beaconPage(_ id: String) -> FleetViews.BeaconPage {
        let now = clock.unixTime()
        return drawn { FleetViews.beacon($0, id: id, broker: $1, now: now) }
    }

    func sensorPage(_ id: String) -> FleetViews.SensorPage {
        let now = clock.unixTime()
        return drawn { FleetViews.sensor($0, id: id, broker: $1, now: now) }
    }

    func presencePage() -> FleetViews.PresencePage {
        let now = clock.unixTime()
        let p = presence.withLock { $0 }
        return drawn { FleetViews.presence(p, model: $0, broker: $1, now: now) }
    }

    func metrics() -> String {
        let p = presence.withLock { $0 }
        return drawn { PrometheusExposition.render($0, broker: $1, presence: p) }
    }
}
