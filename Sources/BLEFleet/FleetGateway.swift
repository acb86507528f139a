/// What the fleet service knows about one gateway, folded from its topics. Encoded as-is for the dashboard's
/// gateway page (snake_case keys); every string in it may come from a payload, so the page must escape it.
public struct FleetGateway: Sendable, Encodable {
    public struct Adapter: Sendable, Encodable, Equatable {
        public var state: String
        public var since: Double
        public var device: String
        public var mode: String?
        public var address: String?
        public var scanning: String?
        public var reason: String?
        public var roles: [String]?
    }

    public struct Health: Sendable, Encodable, Equatable {
        public var ts: Double
        public var uptimeS: Double
        public var spoolDepth: Int
        public var spoolBytes: Int?
        public var droppedSamples: Int
        public var downsampledSamples: Int?
        public var acknowledged: Int
        public var messagesPerS: Double
        public var connected: Bool
        public var reconnects: Int?
        /// The broker node the gateway is on, and its moves between a cluster's nodes (`mqtt.brokers`); absent from
        /// an older gateway's health.
        public var broker: String? = nil
        public var failovers: Int? = nil
        public var rejected: Int?
        public var reports: Int
        /// From two consecutive health readings of one run; nil until there are two.
        public var reportsPerS: Double?
        public var malformedEvents: Int?
        public var trackedBeacons: Int?
        public var rssBytes: Int
        public var regionsInside: Int?
        public var peripheralsConnected: Int?
        public var droppedValues: Int?
        /// Every kind of drop the health topic counts, by where it happened (`transport`, `controller`, `scanner`,
        /// `reassembly_evicted` …); an older gateway's health names fewer.
        public var drops: [String: Int] = [:]
    }

    public struct Config: Sendable, Encodable, Equatable {
        public var status: String
        public var hash: String
        public var version: Int?
        public var errors: [String]
        public var warnings: Int
        public var restartRequired: [String]
    }

    public struct Beacon: Sendable, Encodable, Equatable {
        public var kind: String
        public var address: String
        public var name: String?
        public var rssi: Double?
        public var samples: Int
        public var distanceM: Double?
        public var accuracyM: Double?
        public var proximity: String?
        /// The reading's own time (the gateway's clock, possibly unsynchronised).
        public var ts: Double
        /// The service's clock when it arrived: what ages and plots use, immune to a gateway's clock skew.
        public var receivedAt: Double
        /// When it was ranged, on the service's clock (`GatewayClockOffset.serviceTime`): what presence combines
        /// gateways' readings by, so a gateway whose unsynchronised clock is minutes off still counts.
        public var serviceTs: Double
    }

    public struct Region: Sendable, Encodable, Equatable {
        public var state: String
        public var since: Double
        public var event: String?
        public var beacons: [String]
    }

    public struct Peripheral: Sendable, Encodable, Equatable {
        public var name: String?
        public var state: String
        public var since: Double?
        public var attempts: Int?
        public var reason: String?
        public var reasonCode: Int?
        public var rssi: Int?
        /// With `standby`: the gateway of the fleet that owns it (docs/PERIPHERALS.md).
        public var owner: String?
    }

    /// A broadcasting sensor's latest reading, as this gateway published it.
    public struct Sensor: Sendable, Encodable, Equatable {
        public var address: String
        public var model: String
        public var format: String
        public var values: [String: Double]
        public var rssi: Double?
        public var ts: Double
        /// Service clock of the reading's arrival.
        public var receivedAt: Double
    }

    public let id: String
    /// `online`, `offline`, or `unknown` before a status arrived.
    public var status = "unknown"
    public var statusReason: String?
    /// Online: when the process started. Offline: when the service learnt it (the last will's own `ts` is the
    /// time of the connection it belonged to, not of the loss); nil when the offline status was already retained
    /// when the service subscribed.
    public var since: Double?
    public var version: String?
    public var run: String?
    public var adapter: Adapter?
    public var adapters: [String: Adapter] = [:]
    public var health: Health?
    /// Spool depth change per minute over the recent health readings (positive: the spool is growing).
    public var spoolTrendPerMin: Double?
    public var config: Config?
    public var seq = SeqStream()
    public var messages = 0
    public var invalid = 0
    /// Service clock, seconds since 1970, of the last message from this gateway.
    public var lastMessageAt: Double?
    /// Its clock against the service's, from its live readings.
    public var clock = GatewayClockOffset()
    public var beacons: [String: Beacon] = [:]
    public var regions: [String: Region] = [:]
    public var peripherals: [String: Peripheral] = [:]
    /// Broadcasting sensors (docs/SENSORS.md), by the address in their topic: the latest reading of each.
    public var sensors: [String: Sensor] = [:]
    /// Recent (ts, depth) for the trend; not encoded.
    var recentDepths: [SpoolPoint] = []

    struct SpoolPoint: Sendable, Equatable {
        var ts: Double
        var depth: Int
    }

    /// The site (topic prefix) the gateway publishes under.
    public var site = ""

    public init(id: String, site: String = "") {
        self.id = id
        self.site = site
    }

    enum CodingKeys: String, CodingKey {
        case id, status, statusReason, since, version, run, adapter, adapters, health, spoolTrendPerMin, config, seq
        case messages, invalid, lastMessageAt, beacons, regions, peripherals, sensors, site
    }
}
