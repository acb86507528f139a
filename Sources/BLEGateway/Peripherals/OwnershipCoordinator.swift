import BLEConfiguration
import BLEHCI
import BLEPublishing
import BLETransport
import Foundation
import Logging

/// Carries out `PeripheralOwnership` (docs/PERIPHERALS.md, "One owner per peripheral"): follows the claim topics and
/// every gateway's retained status, has the state machine decide at its deadlines and after events, writes this
/// gateway's claims and tells the peripheral service what it owns.
///
/// Claims go straight to the broker, not through the spool: a claim is a statement about now, worth nothing when
/// replayed after an outage (the lease would have run out), and while the broker is away no other gateway can read
/// it anyway. Each owned claim is renewed every `renew_s`, and the device let go when no claim has come back from the
/// broker for `fence_s` (the machine's fence).
final class OwnershipCoordinator: @unchecked Sendable {
    /// The ownership machine and the foreign claims already logged (by address, logged once each), under one lock.
    let books: Locked<Books>
    struct Books {
        var machine: PeripheralOwnership
        var logged: Set<BDAddress> = []
    }
    let client: MQTTClient
    let topics: Topics
    let peripherals: PeripheralService
    let clock: any BLEClock
    let logger: Logger
    /// Signalled by every event that may change a decision before the machine's next deadline.
    let eventsArrived = WakeSignal()

    init(
        gateway: String, addresses: [BDAddress], lease: Double, margin: Double, client: MQTTClient, topics: Topics,
        peripherals: PeripheralService, clock: any BLEClock, logger: Logger
    ) {
        var s = PeripheralOwnership.Settings()
        s.leaseS = lease
        s.renewS = max(lease / 3, 1)
        s.marginDB = margin
        // Serials start at random (below 2^52, exact as a JSON number): a restarted gateway must not take its last run's
        // retained claim for the echo of a new one.
        let first = UInt64.random(in: 1..<(1 << 52))
        books = Locked(
            Books(
                machine: PeripheralOwnership(gateway: gateway, addresses: addresses, settings: s, firstSerial: first)))
        self.client = client
        self.topics = topics
        self.peripherals = peripherals
        self.clock = clock
        self.logger = logger
        peripherals.coordinate(
            .init(
                heard: { [books, clock, eventsArrived] address, rssi in
                    if books.withLock({ $0.machine.heard(address, rssi: rssi, now: clock.now().seconds) }) {
                        eventsArrived.signal()
                    }
                },
                adapter: { [weak self] up in self?.adapter(up: up) }))
    }

    /// Subscribes (before the client runs, so retained claims and statuses come with the first connection) and
    /// follows; the task ends when cancelled.
    func start() -> Task<Void, Never>? {
        let claims: AsyncStream<MQTTMessage>
        let statuses: AsyncStream<MQTTMessage>
        do {
            claims = try client.subscribe(topics.peripheralOwners, qos: .atLeastOnce)
            statuses = try client.subscribe(topics.allStatuses, qos: .atLeastOnce)
        } catch {
            logger.error("peripherals: cannot follow ownership claims: \(error)")
            return nil
        }
        return Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await m in statuses { self.status(m) } }
                group.addTask { for await m in claims { self.claim(m) } }
                group.addTask {
                    // Decides now, then sleeps until the machine's next deadline or an event that may come first.
                    while !Task.isCancelled {
                        let now = self.clock.now().seconds
                        let actions = self.books.withLock { $0.machine.tick(now: now) }
                        await self.perform(actions)
                        // The next moment after the one just decided (one that fell due while performing is decided
                        // at once, not skipped).
                        let after = self.clock.now().seconds
                        if let next = self.books.withLock({ $0.machine.nextDeadline(after: now) }) {
                            await self.eventsArrived.wait(upTo: .seconds(max(0, next - after)), clock: self.clock)
                        } else {
                            await self.eventsArrived.wait()
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// The runtime saw the broker connection come up.
    func brokerConnected() {
        books.withLock { $0.machine.brokerConnected(now: clock.now().seconds) }
        eventsArrived.signal()
    }

    /// The runtime saw the broker connection go: owned devices stay connected until the machine's fence.
    func brokerLost() {
        books.withLock { $0.machine.brokerLost(now: clock.now().seconds) }
        eventsArrived.signal()
    }

    func adapter(up: Bool) {
        let actions = books.withLock { $0.machine.adapter(up: up, now: clock.now().seconds) }
        eventsArrived.signal()
        if !actions.isEmpty { Task { await perform(actions) } }
    }

    func status(_ m: MQTTMessage) {
        let levels = m.topic.split(separator: "/")
        guard levels.count >= 2, levels.last == "status" else { return }
        let gateway = String(levels[levels.count - 2])
        let presence: PeripheralOwnership.Presence
        if m.payload.isEmpty {
            presence = .stopped
        } else if case .object(let pairs)? = try? RemoteJSONParser.parse(m.payload) {
            let fields = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
            guard case .string(let state)? = fields["state"] else { return }
            // The last will says "connection lost" (GatewayReadings.willPayload): the broker wrote it, not the gateway,
            // which may still hold its links. Any other offline status is the gateway's own, after its links ended.
            if state == "online" {
                presence = .online
            } else if case .string("connection lost")? = fields["reason"] {
                presence = .lost
            } else {
                presence = .stopped
            }
        } else {
            return
        }
        let now = clock.now().seconds
        books.withLock { $0.machine.status(of: gateway, presence, now: now) }
        eventsArrived.signal()
    }

    func claim(_ m: MQTTMessage) {
        let levels = m.topic.split(separator: "/")
        guard levels.count >= 2, let address = BDAddress(topicComponent: levels[levels.count - 2]) else { return }
        let now = clock.now().seconds
        var claim: PeripheralOwnership.Claim?
        if !m.payload.isEmpty {
            guard case .object(let pairs)? = try? RemoteJSONParser.parse(m.payload) else {
                note(address, "a claim that is not a JSON object on \(m.topic): ignored")
                return
            }
            let fields = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
            guard case .string(let gateway)? = fields["gateway"], case .number(let lease, _)? = fields["lease_s"],
                lease > 0
            else {
                note(address, "a claim without gateway and lease_s on \(m.topic): ignored")
                return
            }
            var rssi: Double?
            if case .number(let r, _)? = fields["rssi"] { rssi = r }
            func count(_ key: String) -> UInt64? {
                guard case .number(let n, _)? = fields[key], n >= 0, n < 0x1p53, n == n.rounded() else { return nil }
                return UInt64(n)
            }
            claim = .init(
                gateway: gateway, rssi: rssi, leaseS: lease, receivedAt: now, serial: count("serial"),
                epoch: count("epoch"))
        }
        let taken = books.withLock { $0.machine.claimed(address, claim, now: now, retained: m.retain) }
        eventsArrived.signal()
        if !taken, let c = claim {
            note(
                address,
                "claim on \(m.topic) by \"\(c.gateway)\", not (yet) an online gateway under this prefix: ignored unless its status says online"
            )
        }
    }

    private func note(_ address: BDAddress, _ text: String) {
        if books.withLock({ $0.logged.insert(address).inserted }) { logger.warning("peripherals: \(text)") }
    }

    func perform(_ actions: [PeripheralOwnership.Action]) async {
        for a in actions {
            switch a {
            case .claim(let address, let rssi, let serial, let epoch):
                let (me, lease) = books.withLock { ($0.machine.me, $0.machine.settings.leaseS) }
                var body = #"{"gateway":"\#(me)","lease_s":\#(lease),"epoch":\#(epoch),"serial":\#(serial)"#
                body += #","ts":\#(clock.unixTime())"#
                if let rssi { body += #","rssi":\#((rssi * 10).rounded() / 10)"# }
                body += "}"
                await send(address, Array(body.utf8))
            case .release(let address):
                await send(address, [])
            case .connect(let address):
                peripherals.take(address)
            case .standby(let address, let owner):
                peripherals.standBy(address, owner: owner)
            case .letGo(let address):
                let fence = books.withLock { $0.machine.settings.fenceS }
                logger.warning(
                    "peripheral \(address): the broker has echoed none of this gateway's claims for \(fence) s; let go before the lease runs out (another gateway may take it)"
                )
                peripherals.letGo(address)
            }
        }
    }

    /// Hands the claim to the connection and returns at once: the decisions must not wait for the broker's PUBACK,
    /// which a stalled network holds back for as long as it stalls (a waiting coordinator could not fence). Whether the
    /// claim stands is told by its echo on the claim topic, not by the acknowledgement.
    private func send(_ address: BDAddress, _ payload: [UInt8]) async {
        client.submit(
            MQTTMessage(
                topic: topics.peripheralOwner(address.topicComponent), payload: payload, qos: .atLeastOnce, retain: true
            )
        ) { [logger] result in
            // Not connected: the claim is not made, and the state machine tries again (its echo never came back).
            if case .failure(let error) = result { logger.debug("peripherals: claim on \(address) not sent: \(error)") }
        }
    }
}
