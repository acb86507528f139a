/// What the dashboard's pages receive (as JSON, on load and over Server-Sent Events): cut from the model so an
/// overview of a thousand gateways does not carry fifty thousand beacons.
public enum FleetViews {
    public struct GatewayRow: Sendable, Encodable {
        public var id: String
        /// The site (prefix) it publishes under.
        public var site: String
        public var status: String
        public var statusReason: String?
        public var since: Double?
        public var version: String?
        public var adapter: String?
        public var adapterReason: String?
        public var scanning: String?
        public var spoolDepth: Int?
        public var spoolTrendPerMin: Double?
        public var messagesPerS: Double?
        public var dropped: Int?
        public var gaps: Int
        public var missing: Int
        public var configStatus: String?
        public var configHash: String?
        public var beacons: Int
        public var peripheralsConnected: Int
        public var peripherals: Int
        public var problems: [FleetProblem]
    }

    public struct BeaconRow: Sendable, Encodable {
        public var id: String
        public var name: String?
        public var gateways: Int
        public var bestRSSI: Double?
        public var nearest: String?
    }

    public struct Overview: Sendable, Encodable {
        public var prefix: String
        /// Every site followed (the first is `prefix`).
        public var sites: [String]
        public var now: Double
        public var broker: BrokerState
        public var counters: FleetModel.Counters
        public var recentBadInput: [FleetModel.BadInput]
        public var gateways: [GatewayRow]
        public var beacons: [BeaconRow]
        public var beaconCount: Int
    }

    /// The service's own broker connection, shown on every page.
    public struct BrokerState: Sendable, Encodable, Equatable {
        public var url: String
        public var connected: Bool
        public var reconnects: Int
        public var lastError: String?
        /// Messages the service lost because it fell behind the broker (its subscription keeps 4096 unread).
        public var droppedMessages: Int
        /// This instance's name and standing on the site's lease: `active` publishes presence and rooms; a `standby`
        /// (naming the active instance when it knows it) follows everything and takes over when the lease runs out.
        public var instance = ""
        public var role = "starting"
        public var activeInstance: String?
        /// What the lease ignored (stale claims, unreadable payloads) and how often this instance took over or fenced.
        public var lease = FleetLease.Counters()
        public init(
            url: String, connected: Bool = false, reconnects: Int = 0, lastError: String? = nil,
            droppedMessages: Int = 0, instance: String = ""
        ) {
            self.instance = instance
            self.url = url
            self.connected = connected
            self.reconnects = reconnects
            self.lastError = lastError
            self.droppedMessages = droppedMessages
        }
    }

    /// This instance's standing on the site's lease, as the pages and /metrics show it.
    struct LeaseStanding {
        var role: String
        var activeInstance: String?
        var counters: FleetLease.Counters

        init(_ lease: FleetLease) {
            counters = lease.counters
            switch lease.state {
            case .away: (role, activeInstance) = ("disconnected", nil)
            case .waking: (role, activeInstance) = ("starting", nil)
            case .standby(let holder, _): (role, activeInstance) = ("standby", holder)
            case .claiming: (role, activeInstance) = ("claiming", nil)
            case .active: (role, activeInstance) = ("active", lease.me)
            case .fenced: (role, activeInstance) = ("fenced", nil)
            }
        }
    }

    public struct GatewayPage: Sendable, Encodable {
        public var now: Double
        public var broker: BrokerState
        public var gateway: FleetGateway?
        public var problems: [FleetProblem]
    }

    public struct BeaconHeard: Sendable, Encodable {
        public var gateway: String
        public var reading: FleetGateway.Beacon
    }

    public struct BeaconPage: Sendable, Encodable {
        public var now: Double
        public var broker: BrokerState
        public var id: String
        public var heardBy: [BeaconHeard]
    }

    /// How many beacons the overview lists (strongest first); the count says how many there are in all.
    public static let overviewBeaconLimit = 200

    public static func overview(_ m: FleetModel, broker: BrokerState, now: Double) -> Overview {
        let rows = m.gateways.values.map(row).sorted { a, b in
            let sa = a.problems.first?.severity ?? 0
            let sb = b.problems.first?.severity ?? 0
            return sa != sb ? sa > sb : a.id < b.id
        }
        var index: [String: BeaconRow] = [:]
        for g in m.gateways.values {
            for (id, b) in g.beacons {
                var r = index[id] ?? BeaconRow(id: id, name: b.name, gateways: 0)
                r.gateways += 1
                if let rssi = b.rssi, rssi > (r.bestRSSI ?? -.infinity) {
                    r.bestRSSI = rssi
                    r.nearest = g.id
                }
                index[id] = r
            }
        }
        let beacons = index.values.sorted { ($0.bestRSSI ?? -999, $1.id) > ($1.bestRSSI ?? -999, $0.id) }
        return Overview(
            prefix: m.prefix, sites: m.sites, now: now, broker: broker, counters: m.counters,
            recentBadInput: m.recentBadInput, gateways: rows,
            beacons: Array(beacons.prefix(overviewBeaconLimit)), beaconCount: index.count)
    }

    static func row(_ g: FleetGateway) -> GatewayRow {
        GatewayRow(
            id: g.id, site: g.site, status: g.status, statusReason: g.statusReason, since: g.since, version: g.version,
            adapter: g.adapter?.state, adapterReason: g.adapter?.reason, scanning: g.adapter?.scanning,
            spoolDepth: g.health?.spoolDepth, spoolTrendPerMin: g.spoolTrendPerMin,
            messagesPerS: g.health?.messagesPerS, dropped: g.health?.droppedSamples, gaps: g.seq.gaps,
            missing: g.seq.missing, configStatus: g.config?.status, configHash: g.config?.hash,
            beacons: g.beacons.count,
            peripheralsConnected: g.peripherals.values.filter { $0.state == "connected" }.count,
            peripherals: g.peripherals.count, problems: g.problems)
    }

    public static func gateway(_ m: FleetModel, id: String, broker: BrokerState, now: Double) -> GatewayPage {
        let g = m.gateways[id]
        return GatewayPage(now: now, broker: broker, gateway: g, problems: g?.problems ?? [])
    }

    public struct SensorHeard: Sendable, Encodable {
        public var gateway: String
        public var reading: FleetGateway.Sensor
    }

    public struct SensorPage: Sendable, Encodable {
        public var now: Double
        public var broker: BrokerState
        public var id: String
        public var heardBy: [SensorHeard]
    }

    /// A broadcasting sensor (by the address in its topic) as every gateway that reports it has it.
    public static func sensor(_ m: FleetModel, id: String, broker: BrokerState, now: Double) -> SensorPage {
        let heard = m.gateways.values.compactMap { g in g.sensors[id].map { SensorHeard(gateway: g.id, reading: $0) } }
            .sorted { $0.gateway < $1.gateway }
        return SensorPage(now: now, broker: broker, id: id, heardBy: heard)
    }

    public static func beacon(_ m: FleetModel, id: String, broker: BrokerState, now: Double) -> BeaconPage {
        let heard = m.gateways.values.compactMap { g in g.beacons[id].map { BeaconHeard(gateway: g.id, reading: $0) } }
            .sorted { $0.gateway < $1.gateway }
        return BeaconPage(now: now, broker: broker, id: id, heardBy: heard)
    }
}
