import Foundation

/// The fleet as the broker shows it: every gateway under one prefix (or under each of a list of sites, each a
/// prefix), folded from the retained topics (which rebuild it after a restart) and the live stream. Pure: messages
/// and the service's clock in, state out; no I/O.
///
/// Across sites a gateway is known by its id, so the ids must differ between the sites one service follows: a second
/// gateway with an id already seen under another site is bad input (`siteConflicts`), never merged into the first.
public struct FleetModel: Sendable {
    /// Counts of what could not be folded, shown on the overview (bad input is counted, never fatal).
    public struct Counters: Sendable, Encodable, Equatable {
        public var messages = 0
        /// Payloads that are not JSON or do not match schema/v1.
        public var invalidPayloads = 0
        /// Topics under the prefix that are not in the topic schema.
        public var unknownTopics = 0
        /// Topics whose gateway level is not `[A-Za-z0-9._-]`.
        public var badGatewayIDs = 0
        /// Retained topics cleared (empty payload).
        public var cleared = 0
        /// Messages from a gateway whose id is already a gateway of another site.
        public var siteConflicts = 0
    }

    /// One recent piece of bad input, for the overview (topic and reason only, never the payload).
    public struct BadInput: Sendable, Encodable, Equatable {
        public var at: Double
        public var topic: String
        public var reason: String
    }

    /// The sites followed, each a topic prefix; the first is `prefix`.
    public let sites: [String]
    public var prefix: String { sites[0] }
    public private(set) var gateways: [String: FleetGateway] = [:]
    public private(set) var counters = Counters()
    /// The newest 20 bad inputs, newest last.
    public private(set) var recentBadInput: [BadInput] = []
    /// Increases with every change, so readers can tell whether anything is new.
    public private(set) var revision = 0

    /// How many health readings the spool trend looks back over.
    static let trendWindow = 6
    static let badInputKept = 20

    public init(prefix: String) { self.init(sites: [prefix]) }

    /// - Parameter sites: one or more prefixes, none inside another (`acme` and `acme/site-a` would share topics).
    public init(sites: [String]) {
        precondition(!sites.isEmpty, "a fleet model follows at least one site")
        self.sites = sites
    }

    /// Folds one message. `retained` is the MQTT retain flag as received (set only for messages the broker stored
    /// before this subscription); `now` is the service's clock.
    /// Returns the site and where the topic sits in the schema (nil outside every site).
    @discardableResult
    public mutating func receive(topic: String, payload: [UInt8], retained: Bool, now: Double) -> (
        site: String, topic: FleetTopic
    )? {
        guard let (site, kind) = Self.parse(topic, sites: sites) else { return nil }
        receive(site: site, kind: kind, topic: topic, payload: payload, retained: retained, now: now)
        return (site, kind)
    }

    private mutating func receive(
        site: String, kind: FleetTopic, topic: String, payload: [UInt8], retained: Bool, now: Double
    ) {
        counters.messages += 1
        revision += 1
        switch kind {
        case .notFromAGateway:
            return
        case .badGatewayID:
            counters.badGatewayIDs += 1
            noteBad(topic, "gateway id outside [A-Za-z0-9._-]", now)
            return
        case .unknown:
            counters.unknownTopics += 1
            noteBad(topic, "not in the topic schema", now)
            return
        default:
            break
        }
        guard let id = kind.gateway else { return }
        if payload.isEmpty {
            // Only for the site the gateway belongs to: the same id under another site is another gateway.
            if gateways[id].map({ $0.site == site }) ?? true { clear(kind, gateway: id) }
            return
        }
        // Folded in place: a copy of the gateway would copy its beacon table at every message.
        if gateways[id] == nil { gateways[id] = FleetGateway(id: id, site: site) }
        if gateways[id]!.site != site {
            counters.siteConflicts += 1
            noteBad(topic, "gateway id \(id) is already a gateway of site \(gateways[id]!.site)/", now)
            return
        }
        gateways[id]!.messages += 1
        gateways[id]!.lastMessageAt = now
        do {
            try Self.fold(kind, payload: payload, retained: retained, now: now, into: &gateways[id]!)
        } catch {
            gateways[id]!.invalid += 1
            counters.invalidPayloads += 1
            noteBad(topic, Self.describe(error), now)
        }
    }

    /// The site `topic` is under, and what it is there. One site: its prefix only (the common case, no search).
    static func parse(_ topic: String, sites: [String]) -> (String, FleetTopic)? {
        for site in sites {
            if let kind = FleetTopic(topic, prefix: site) { return (site, kind) }
        }
        return nil
    }

    /// Forgets beacons and sensors no gateway has reported for `age` seconds (service clock), so the model stays
    /// bounded.
    public mutating func forgetBeacons(olderThan age: Double, now: Double) {
        for id in gateways.keys {
            let before = gateways[id]!.beacons.count + gateways[id]!.sensors.count
            gateways[id]!.beacons = gateways[id]!.beacons.filter { now - $0.value.receivedAt <= age }
            gateways[id]!.sensors = gateways[id]!.sensors.filter { now - $0.value.receivedAt <= age }
            if gateways[id]!.beacons.count + gateways[id]!.sensors.count != before { revision += 1 }
        }
    }

    private mutating func noteBad(_ topic: String, _ reason: String, _ now: Double) {
        recentBadInput.append(BadInput(at: now, topic: topic, reason: reason))
        if recentBadInput.count > Self.badInputKept { recentBadInput.removeFirst() }
    }

    /// An empty retained payload deletes the retained message: forget what it described.
    private mutating func clear(_ kind: FleetTopic, gateway id: String) {
        counters.cleared += 1
        guard gateways[id] != nil else { return }
        switch kind {
        case .region(_, let r): gateways[id]!.regions[r] = nil
        case .peripheralState(_, let a): gateways[id]!.peripherals[a] = nil
        case .adapterSlot(_, let s): gateways[id]!.adapters[s] = nil
        case .configState: gateways[id]!.config = nil
        default: break
        }
    }

    private static let decoder = JSONDecoder()

    private static func fold(
        _ kind: FleetTopic, payload: [UInt8], retained: Bool, now: Double,
        into g: inout FleetGateway
    ) throws {
        /// Decodes the payload as `Body` with its envelope, and folds the envelope into the seq stream.
        func read<Body: Decodable>(_: Body.Type) throws -> (FleetPayload.Envelope, Body) {
            let r = try Self.decoder.decode(FleetPayload.Reading<Body>.self, from: Data(payload))
            g.seq.receive(run: r.envelope.run, seq: r.envelope.seq, retained: retained)
            observeClock(r.envelope)
            return (r.envelope, r.body)
        }
        /// The streams' payloads (tens of thousands a second) in one pass (FleetJSON); `body` reads the topic's own
        /// fields before the envelope joins the seq stream, so a bad payload changes nothing.
        func readFlat<Body>(_ body: (FleetJSON) throws -> Body) throws -> (FleetPayload.Envelope, Body) {
            let j = try FleetJSON(payload)
            let envelope = try FleetPayload.Envelope(j)
            let b = try body(j)
            g.seq.receive(run: envelope.run, seq: envelope.seq, retained: retained)
            observeClock(envelope)
            return (envelope, b)
        }
        /// Live readings only: a retained message is as old as it is, and the last will (no seq) carries its
        /// connection's time.
        func observeClock(_ e: FleetPayload.Envelope) {
            guard !retained, e.seq != nil else { return }
            g.clock.observe(ts: e.ts, receivedAt: now, run: e.run, synchronized: e.clock_synced)
        }
        switch kind {
        case .status:
            let (envelope, s) = try read(FleetPayload.Status.self)
            g.status = s.state
            g.version = s.version
            g.run = envelope.run
            g.statusReason = s.reason
            // The last will's ts is its connection's, so "offline since" is when the service saw it go.
            g.since = s.state == "online" ? s.started : (retained ? nil : now)
        case .adapter:
            let a = try read(FleetPayload.Adapter.self).1
            g.adapter = FleetGateway.Adapter(
                state: a.state, since: a.since, device: a.device, mode: a.mode,
                address: a.address, scanning: a.scanning, reason: a.reason, roles: a.roles)
        case .adapterSlot(_, let slot):
            let a = try read(FleetPayload.Adapter.self).1
            g.adapters[slot] = FleetGateway.Adapter(
                state: a.state, since: a.since, device: a.device, mode: a.mode,
                address: a.address, scanning: a.scanning, reason: a.reason,
                roles: a.roles)
        case .health:
            let (envelope, h) = try read(FleetPayload.Health.self)
            fold(h, ts: envelope.ts, run: envelope.run, into: &g)
        case .beacon(_, let id):
            let (envelope, b) = try readFlat(FleetPayload.Beacon.init)
            g.beacons[id] = FleetGateway.Beacon(
                kind: b.kind, address: b.address, name: b.name, rssi: b.rssi,
                samples: b.samples, distanceM: b.distance_m, accuracyM: b.accuracy_m,
                proximity: b.proximity, ts: envelope.ts, receivedAt: now,
                serviceTs: g.clock.serviceTime(of: envelope.ts, synchronized: envelope.clock_synced))
        case .region(_, let id):
            let r = try read(FleetPayload.Region.self).1
            if r.state == "removed" {
                g.regions[id] = nil
            } else {
                g.regions[id] = FleetGateway.Region(
                    state: r.state, since: r.since, event: r.event,
                    beacons: r.beacons ?? [])
            }
        case .peripheralState(_, let address):
            let p = try read(FleetPayload.PeripheralState.self).1
            var v = g.peripherals[address] ?? FleetGateway.Peripheral(state: p.state)
            v.name = p.name ?? v.name
            v.state = p.state
            v.since = p.since
            v.attempts = p.attempts
            v.reason = p.reason ?? p.owner.map { "owned by \($0)" }
            v.reasonCode = p.reason_code
            v.owner = p.owner
            g.peripherals[address] = v
        case .peripheralRSSI(_, let address):
            let p = try readFlat(FleetPayload.PeripheralRSSI.init).1
            g.peripherals[address, default: FleetGateway.Peripheral(state: "?")].rssi = p.rssi
        case .configState:
            let c = try read(FleetPayload.ConfigState.self).1
            g.config = FleetGateway.Config(
                status: c.status, hash: c.hash, version: c.version,
                errors: c.errors.map { "\($0.path): \($0.reason)" },
                warnings: c.warnings.count, restartRequired: c.restart_required ?? [])
        case .sensor(_, let address):
            let (envelope, s) = try readFlat(FleetPayload.Sensor.init)
            g.sensors[address] = FleetGateway.Sensor(
                address: s.address, model: s.model, format: s.format,
                values: s.values, rssi: s.rssi, ts: envelope.ts, receivedAt: now)
        case .raw, .peripheralOther, .enrolment:
            // In the seq stream, not on the dashboard: only the envelope is read.
            _ = try readFlat { _ in () }
        case .notFromAGateway, .badGatewayID, .unknown:
            break
        }
    }

    /// The health's drop counters by stage, those it has.
    static func drops(_ h: FleetPayload.Health) -> [String: Int] {
        let stages: [(String, Int?)] = [
            ("transport", h.scan.dropped?.transport), ("controller", h.scan.dropped?.controller),
            ("scanner", h.scan.dropped?.scanner), ("reassembly_evicted", h.scan.reassembly?.evicted),
            ("reassembly_expired", h.scan.reassembly?.expired), ("reassembly_oversized", h.scan.reassembly?.oversized),
            ("raw_rate_limited", h.scan.raw_rate_limited), ("telemetry_discarded", h.scan.telemetry_discarded),
            ("subscriptions", h.publish.dropped_deliveries), ("peripheral_values", h.peripherals?.dropped_values),
            ("publisher_notices", h.publish.notices_dropped),
        ]
        return stages.reduce(into: [:]) { d, s in if let v = s.1 { d[s.0] = v } }
    }

    private static func fold(_ h: FleetPayload.Health, ts: Double, run: String, into g: inout FleetGateway) {
        var reportsPerS: Double?
        if let last = g.health, g.run == run || g.run == nil, ts > last.ts, h.scan.reports >= last.reports {
            reportsPerS = Double(h.scan.reports - last.reports) / (ts - last.ts)
        }
        g.health = FleetGateway.Health(
            ts: ts, uptimeS: h.uptime_s, spoolDepth: h.spool.depth, spoolBytes: h.spool.bytes,
            droppedSamples: h.spool.dropped_samples, downsampledSamples: h.spool.downsampled_samples,
            acknowledged: h.publish.acknowledged, messagesPerS: h.publish.rate_per_s, connected: h.publish.connected,
            reconnects: h.publish.reconnects, broker: h.publish.broker, failovers: h.publish.failovers,
            rejected: h.publish.rejected, reports: h.scan.reports,
            reportsPerS: reportsPerS, malformedEvents: h.scan.malformed_events, trackedBeacons: h.scan.tracked_beacons,
            rssBytes: h.memory.rss_bytes, regionsInside: h.regions?.inside,
            peripheralsConnected: h.peripherals?.connected, droppedValues: h.peripherals?.dropped_values,
            drops: Self.drops(h))
        g.recentDepths.append(.init(ts: ts, depth: h.spool.depth))
        if g.recentDepths.count > Self.trendWindow { g.recentDepths.removeFirst() }
        if let first = g.recentDepths.first, let last = g.recentDepths.last, last.ts - first.ts > 0,
            g.recentDepths.count >= 3
        {
            g.spoolTrendPerMin = Double(last.depth - first.depth) / (last.ts - first.ts) * 60
        } else {
            g.spoolTrendPerMin = nil
        }
    }

    /// A short reason for an operator: which field, not the decoder's whole dump.
    static func describe(_ error: any Error) -> String {
        switch error {
        case FleetJSON.Failure.notJSON: return "not JSON"
        case FleetJSON.Failure.missingField(let key): return "missing field \(key)"
        case FleetJSON.Failure.wrongType(let key): return "wrong type at \(key)"
        case FleetJSON.Failure.duplicateKey(let key): return "duplicate field \(key)"
        case DecodingError.keyNotFound(let key, _): return "missing field \(key.stringValue)"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c):
            return "wrong type at " + (c.codingPath.map(\.stringValue).joined(separator: ".").nilIfEmpty ?? "top level")
        case DecodingError.dataCorrupted: return "not JSON"
        default: return "undecodable"
        }
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
