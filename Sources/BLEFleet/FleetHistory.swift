import BLESpool
import BLETransport

/// The dashboard's plots, kept in SQLite beside the service so a restart keeps them: one point per gateway (health),
/// per beacon and gateway (ranging) and per sensor, quantity and gateway every `resolution` seconds for the last
/// `fullResolutionS`; older points are folded into one per minute with the least, mean and greatest value of each
/// series, kept for `retentionS` (`fleet.history_retention_h`). A day of 1,000 gateways at 10 s would be 8.6 million
/// health rows alone; folded, the hour before now stays sharp and the rest of the day costs a sixth.
/// Times are the service's clock, bucketed, so gateways with skewed clocks still line up.
public final class FleetHistory: Sendable {
    public static let resolution = 10.0
    public static let fullResolutionS = 3600.0
    public static let minute: Int64 = 60
    public static let defaultRetentionS = 24 * 3600.0
    /// What `retentionS` may be: at least the hour kept whole, at most a year.
    public static let retentionRange = 3600.0...(366 * 24 * 3600.0)
    public let retentionS: Double

    /// One plotted health point: service time and the four series of the gateway page.
    public struct HealthPoint: Sendable, Encodable, Equatable {
        public var t: Double
        /// Each series' value; in a folded minute, its mean.
        public var messagesPerS: Double?
        public var spoolDepth: Double?
        public var reportsPerS: Double?
        public var rssBytes: Double?
        /// 10 for a point as recorded, 60 for a folded minute.
        public var spanS = FleetHistory.resolution
        public var min: Values?
        public var max: Values?

        public struct Values: Sendable, Encodable, Equatable {
            public var messagesPerS: Double?
            public var spoolDepth: Double?
            public var reportsPerS: Double?
            public var rssBytes: Double?
        }
    }

    /// One plotted ranging point of one beacon as one gateway heard it.
    public struct RangePoint: Sendable, Encodable, Equatable {
        public var t: Double
        public var rssi: Double?
        public var distanceM: Double?
        public var spanS = FleetHistory.resolution
        public var min: Values?
        public var max: Values?

        public struct Values: Sendable, Encodable, Equatable {
            public var rssi: Double?
            public var distanceM: Double?
        }
    }

    private struct Store: @unchecked Sendable {
        // Touched only under `store`'s lock.
        let db: SQLiteConnection
        let insertHealth: SQLiteStatement
        let insertRange: SQLiteStatement
        let prune: [SQLiteStatement]
        /// Each table's full-resolution points before a minute boundary folded into its minute table, then deleted.
        let fold: [SQLiteStatement]
        let healthSeries: SQLiteStatement
        let rangeSeries: SQLiteStatement
        let insertSensor: SQLiteStatement
        let sensorSeries: SQLiteStatement
    }

    /// One plotted sensor value.
    public struct SensorPoint: Sendable, Encodable, Equatable {
        public var t: Double
        public var value: Double
        public var spanS = FleetHistory.resolution
        public var min: Double?
        public var max: Double?
    }

    private let store: Locked<Store>

    public init(path: String, retentionS: Double = FleetHistory.defaultRetentionS) throws {
        precondition(Self.retentionRange.contains(retentionS), "the configuration reader checks the retention")
        self.retentionS = retentionS
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
            CREATE TABLE IF NOT EXISTS gateway_health_1m(
                gateway TEXT NOT NULL, t INTEGER NOT NULL,
                messages_per_s REAL, messages_per_s_min REAL, messages_per_s_max REAL,
                spool_depth REAL, spool_depth_min REAL, spool_depth_max REAL,
                reports_per_s REAL, reports_per_s_min REAL, reports_per_s_max REAL,
                rss_bytes REAL, rss_bytes_min REAL, rss_bytes_max REAL, PRIMARY KEY(gateway, t)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS gateway_health_1m_t ON gateway_health_1m(t);
            CREATE TABLE IF NOT EXISTS beacon_range_1m(
                beacon TEXT NOT NULL, gateway TEXT NOT NULL, t INTEGER NOT NULL,
                rssi REAL, rssi_min REAL, rssi_max REAL, distance_m REAL, distance_m_min REAL, distance_m_max REAL,
                PRIMARY KEY(beacon, t, gateway)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS beacon_range_1m_t ON beacon_range_1m(t);
            CREATE TABLE IF NOT EXISTS sensor_values_1m(
                sensor TEXT NOT NULL, quantity TEXT NOT NULL, gateway TEXT NOT NULL, t INTEGER NOT NULL,
                value REAL, value_min REAL, value_max REAL, PRIMARY KEY(sensor, quantity, t, gateway)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS sensor_values_1m_t ON sensor_values_1m(t);
            """)
        // One column's mean, least and greatest over a minute of full-resolution points.
        func folded(_ columns: [String]) -> String {
            columns.map { "avg(\($0)), min(\($0)), max(\($0))" }.joined(separator: ", ")
        }
        store = Locked(
            Store(
                db: db,
                insertHealth: try db.prepare("INSERT OR REPLACE INTO gateway_health VALUES(?1, ?2, ?3, ?4, ?5, ?6)"),
                insertRange: try db.prepare("INSERT OR REPLACE INTO beacon_range VALUES(?1, ?2, ?3, ?4, ?5)"),
                prune: [
                    try db.prepare("DELETE FROM gateway_health_1m WHERE t < ?1"),
                    try db.prepare("DELETE FROM beacon_range_1m WHERE t < ?1"),
                    try db.prepare("DELETE FROM sensor_values_1m WHERE t < ?1"),
                ],
                fold: [
                    try db.prepare(
                        """
                        INSERT OR REPLACE INTO gateway_health_1m SELECT gateway, t / 60 * 60,
                        \(folded(["messages_per_s", "spool_depth", "reports_per_s", "rss_bytes"]))
                        FROM gateway_health WHERE t < ?1 GROUP BY gateway, t / 60
                        """),
                    try db.prepare("DELETE FROM gateway_health WHERE t < ?1"),
                    try db.prepare(
                        """
                        INSERT OR REPLACE INTO beacon_range_1m SELECT beacon, gateway, t / 60 * 60,
                        \(folded(["rssi", "distance_m"])) FROM beacon_range WHERE t < ?1 GROUP BY beacon, gateway, t / 60
                        """),
                    try db.prepare("DELETE FROM beacon_range WHERE t < ?1"),
                    try db.prepare(
                        """
                        INSERT OR REPLACE INTO sensor_values_1m SELECT sensor, quantity, gateway, t / 60 * 60,
                        \(folded(["value"])) FROM sensor_values WHERE t < ?1 GROUP BY sensor, quantity, gateway, t / 60
                        """),
                    try db.prepare("DELETE FROM sensor_values WHERE t < ?1"),
                ],
                // The folded minutes, then the points as recorded (all later than any folded minute); a point as recorded
                // has no extremes, and a span of 10 s against the minute's 60.
                healthSeries: try db.prepare(
                    """
                    SELECT t, 60, messages_per_s, messages_per_s_min, messages_per_s_max, spool_depth, spool_depth_min,
                    spool_depth_max, reports_per_s, reports_per_s_min, reports_per_s_max, rss_bytes, rss_bytes_min,
                    rss_bytes_max FROM gateway_health_1m WHERE gateway = ?1 AND t >= ?2
                    UNION ALL SELECT t, 10, messages_per_s, NULL, NULL, spool_depth, NULL, NULL, reports_per_s, NULL, NULL,
                    rss_bytes, NULL, NULL FROM gateway_health WHERE gateway = ?1 AND t >= ?2 ORDER BY t
                    """),
                rangeSeries: try db.prepare(
                    """
                    SELECT gateway, t, 60, rssi, rssi_min, rssi_max, distance_m, distance_m_min, distance_m_max
                    FROM beacon_range_1m WHERE beacon = ?1 AND t >= ?2
                    UNION ALL SELECT gateway, t, 10, rssi, NULL, NULL, distance_m, NULL, NULL
                    FROM beacon_range WHERE beacon = ?1 AND t >= ?2 ORDER BY t
                    """),
                insertSensor: try db.prepare("INSERT OR REPLACE INTO sensor_values VALUES(?1, ?2, ?3, ?4, ?5)"),
                sensorSeries: try db.prepare(
                    """
                    SELECT quantity, gateway, t, 60, value, value_min, value_max FROM sensor_values_1m
                    WHERE sensor = ?1 AND t >= ?2
                    UNION ALL SELECT quantity, gateway, t, 10, value, NULL, NULL FROM sensor_values
                    WHERE sensor = ?1 AND t >= ?2 ORDER BY t
                    """)))
    }

    static func bucket(_ now: Double) -> Int64 { Int64((now / resolution).rounded(.down) * resolution) }

    /// Records the model's current values in the bucket of `now`: online gateways' health, and every beacon any
    /// gateway reported within the last bucket. Then folds the minutes that left the full-resolution hour (each
    /// minute once: its points go with it) and drops the minutes older than the retention.
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
                let folding = (t - Int64(Self.fullResolutionS)) / Self.minute * Self.minute
                for f in s.fold {
                    f.reset()
                    f.bind(1, folding)
                    try f.run()
                }
                for p in s.prune {
                    p.reset()
                    p.bind(1, t - Int64(retentionS))
                    try p.run()
                }
                try s.db.execute("COMMIT")
            } catch {
                try? s.db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The file's size on disk, in bytes, once the write-ahead log is checkpointed into it (what a day of history
    /// costs; `blegateway-bench history` measures it).
    public func checkpointedSize() -> Double {
        store.withLock { s in
            _ = try? s.db.text("PRAGMA wal_checkpoint(TRUNCATE)")
            let pages = (try? s.db.text("PRAGMA page_count")).flatMap { $0.flatMap { Double($0) } } ?? 0
            let size = (try? s.db.text("PRAGMA page_size")).flatMap { $0.flatMap { Double($0) } } ?? 0
            return pages * size
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
                var p = HealthPoint(
                    t: q.double(0), messagesPerS: q.optionalDouble(2), spoolDepth: q.optionalDouble(5),
                    reportsPerS: q.optionalDouble(8), rssBytes: q.optionalDouble(11), spanS: q.double(1))
                if p.spanS > Self.resolution {
                    p.min = .init(
                        messagesPerS: q.optionalDouble(3), spoolDepth: q.optionalDouble(6),
                        reportsPerS: q.optionalDouble(9), rssBytes: q.optionalDouble(12))
                    p.max = .init(
                        messagesPerS: q.optionalDouble(4), spoolDepth: q.optionalDouble(7),
                        reportsPerS: q.optionalDouble(10), rssBytes: q.optionalDouble(13))
                }
                out.append(p)
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
                var p = RangePoint(
                    t: q.double(1), rssi: q.optionalDouble(3), distanceM: q.optionalDouble(6), spanS: q.double(2))
                if p.spanS > Self.resolution {
                    p.min = .init(rssi: q.optionalDouble(4), distanceM: q.optionalDouble(7))
                    p.max = .init(rssi: q.optionalDouble(5), distanceM: q.optionalDouble(8))
                }
                out[q.text(0), default: []].append(p)
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
                guard let v = q.optionalDouble(4) else { continue }
                out[q.text(0), default: [:]][q.text(1), default: []].append(
                    SensorPoint(
                        t: q.double(2), value: v, spanS: q.double(3), min: q.optionalDouble(5), max: q.optionalDouble(6)
                    ))
            }
            return out
        }
    }
}
