import BLESpool
import BLETransport

/// The dashboard's plots, kept in SQLite beside the service so a restart keeps them: one point per gateway (health),
/// per beacon and gateway (ranging) and per sensor, quantity and gateway every `resolution` seconds, for `retention`
/// seconds.
/// Times are the service's clock, bucketed, so gateways with skewed clocks still line up.
public final class FleetHistory: Sendable {
    public static let resolution = 10.0
    public static let retention = 24 * 3600.0

    /// One plotted health point: service time and the four series of the gateway page.
    public struct HealthPoint: Sendable, Encodable, Equatable {
        public var t: Double
        public var messagesPerS: Double?
        public var spoolDepth: Double?
        public var reportsPerS: Double?
        public var rssBytes: Double?
    }

    /// One plotted ranging point of one beacon as one gateway heard it.
    public struct RangePoint: Sendable, Encodable, Equatable {
        public var t: Double
        public var rssi: Double?
        public var distanceM: Double?
    }

    private struct Store: @unchecked Sendable {
        // Touched only under `store`'s lock.
        let db: SQLiteConnection
        let insertHealth: SQLiteStatement
        let insertRange: SQLiteStatement
        let prune: [SQLiteStatement]
        let healthSeries: SQLiteStatement
        let rangeSeries: SQLiteStatement
        let insertSensor: SQLiteStatement
        let sensorSeries: SQLiteStatement
    }

    /// One plotted sensor value.
    public struct SensorPoint: Sendable, Encodable, Equatable {
        public var t: Double
        public var value: Double
    }

    private let store: Locked<Store>

    public init(path: String) throws {
        let db = try SQLiteConnection(path: path)
        // WAL: a flush every 10 s must not block the page's reads for long; NORMAL sync is enough for plots.
        _ = try db.text("PRAGMA journal_mode=WAL")
        try db.execute("PRAGMA synchronous=NORMAL")
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS gateway_health(
                gateway TEXT NOT NULL, t INTEGER NOT NULL, messages_per_s REAL, spool_depth REAL,
                reports_per_s REAL, rss_bytes REAL, PRIMARY KEY(gateway, t)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS gateway_health_t ON gateway_health(t);
            CREATE TABLE IF NOT EXISTS beacon_range(
                beacon TEXT NOT NULL, gateway TEXT NOT NULL, t INTEGER NOT NULL, rssi REAL, distance_m REAL,
                PRIMARY KEY(beacon, t, gateway)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS beacon_range_t ON beacon_range(t);
            CREATE TABLE IF NOT EXISTS sensor_values(
                sensor TEXT NOT NULL, quantity TEXT NOT NULL, gateway TEXT NOT NULL, t INTEGER NOT NULL, value REAL,
                PRIMARY KEY(sensor, quantity, t, gateway)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS sensor_values_t ON sensor_values(t);
            """)
        store = Locked(
            Store(
                db: db,
                insertHealth: try db.prepare("INSERT OR REPLACE INTO gateway_health VALUES(?1, ?2, ?3, ?4, ?5, ?6)"),
                insertRange: try db.prepare("INSERT OR REPLACE INTO beacon_range VALUES(?1, ?2, ?3, ?4, ?5)"),
                prune: [
                    try db.prepare("DELETE FROM gateway_health WHERE t < ?1"),
                    try db.prepare("DELETE FROM beacon_range WHERE t < ?1"),
                    try db.prepare("DELETE FROM sensor_values WHERE t < ?1"),
                ],
                healthSeries: try db.prepare(
                    """
                    SELECT t, messages_per_s, spool_depth, reports_per_s, rss_bytes FROM gateway_health
                    WHERE gateway = ?1 AND t >= ?2 ORDER BY t
                    """),
                rangeSeries: try db.prepare(
                    """
                    SELECT gateway, t, rssi, distance_m FROM beacon_range WHERE beacon = ?1 AND t >= ?2 ORDER BY t
                    """),
                insertSensor: try db.prepare("INSERT OR REPLACE INTO sensor_values VALUES(?1, ?2, ?3, ?4, ?5)"),
                sensorSeries: try db.prepare(
                    """
                    SELECT quantity, gateway, t, value FROM sensor_values WHERE sensor = ?1 AND t >= ?2 ORDER BY t
                    """)))
    }

    static func bucket(_ now: Double) -> Int64 { Int64((now / resolution).rounded(.down) * resolution) }

    /// Records the model's current values in the bucket of `now`: online gateways' health, and every beacon any
    /// gateway reported within the last bucket. Then drops what is older than the retention.
    public func record(_ model: FleetModel, now: Double) throws {
        let t = Self.bucket(now)
        try store.withLock { s in
            try s.db.execute("BEGIN")
            do {
                for g in model.gateways.values {
                    if g.status == "online", let h = g.health {
                        s.insertHealth.reset()
                        s.insertHealth.bind(1, g.id)
                        s.insertHealth.bind(2, t)
                        s.insertHealth.bind(3, Optional(h.messagesPerS))
                        s.insertHealth.bind(4, Optional(Double(h.spoolDepth)))
                        s.insertHealth.bind(5, h.reportsPerS)
                        s.insertHealth.bind(6, Optional(Double(h.rssBytes)))
                        try s.insertHealth.run()
                    }
                    for (id, b) in g.beacons where now - b.receivedAt <= Self.resolution {
                        s.insertRange.reset()
                        s.insertRange.bind(1, id)
                        s.insertRange.bind(2, g.id)
                        s.insertRange.bind(3, t)
                        s.insertRange.bind(4, b.rssi)
                        s.insertRange.bind(5, b.distanceM)
                        try s.insertRange.run()
                    }
                    for (id, sensor) in g.sensors where now - sensor.receivedAt <= Self.resolution {
                        for (quantity, value) in sensor.values {
                            s.insertSensor.reset()
                            s.insertSensor.bind(1, id)
                            s.insertSensor.bind(2, quantity)
                            s.insertSensor.bind(3, g.id)
                            s.insertSensor.bind(4, t)
                            s.insertSensor.bind(5, Optional(value))
                            try s.insertSensor.run()
                        }
                    }
                }
                for p in s.prune {
                    p.reset()
                    p.bind(1, t - Int64(Self.retention))
                    try p.run()
                }
                try s.db.execute("COMMIT")
            } catch {
                try? s.db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// A gateway's health points since `since` (service time), oldest first.
    public func health(gateway: String, since: Double) throws -> [HealthPoint] {
        try store.withLock { s in
            let q = s.healthSeries
            q.reset()
            q.bind(1, gateway)
            q.bind(2, Int64(since))
            defer { q.reset() }
            var out: [HealthPoint] = []
            while try q.step() {
                out.append(
                    HealthPoint(
                        t: q.double(0), messagesPerS: q.optionalDouble(1),
                        spoolDepth: q.optionalDouble(2), reportsPerS: q.optionalDouble(3),
                        rssBytes: q.optionalDouble(4)))
            }
            return out
        }
    }

    /// A beacon's ranging points since `since`, by gateway, oldest first.
    public func ranging(beacon: String, since: Double) throws -> [String: [RangePoint]] {
        try store.withLock { s in
            let q = s.rangeSeries
            q.reset()
            q.bind(1, beacon)
            q.bind(2, Int64(since))
            defer { q.reset() }
            var out: [String: [RangePoint]] = [:]
            while try q.step() {
                out[q.text(0), default: []].append(
                    RangePoint(t: q.double(1), rssi: q.optionalDouble(2), distanceM: q.optionalDouble(3)))
            }
            return out
        }
    }

    /// A sensor's values since `since`, by quantity and then gateway, oldest first.
    public func sensor(_ sensor: String, since: Double) throws -> [String: [String: [SensorPoint]]] {
        try store.withLock { s in
            let q = s.sensorSeries
            q.reset()
            q.bind(1, sensor)
            q.bind(2, Int64(since))
            defer { q.reset() }
            var out: [String: [String: [SensorPoint]]] = [:]
            while try q.step() {
                guard let v = q.optionalDouble(3) else { continue }
                out[q.text(0), default: [:]][q.text(1), default: []].append(SensorPoint(t: q.double(2), value: v))
            }
            return out
        }
    }
}
