/// The class of a reading, which decides what the spool may do with it when it is full. Open, like a wire code.
public struct ReadingClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Connection state, region enter/exit, adapter state, configuration acknowledgements: NEVER dropped.
    public static let state = ReadingClass(rawValue: 0)
    /// RSSI samples: downsampled, then dropped oldest first, when the spool is full; every removal is counted.
    public static let sample = ReadingClass(rawValue: 1)

    public var description: String {
        switch self {
        case .state: "state"
        case .sample: "sample"
        default: "class \(rawValue)"
        }
    }
}

/// One message to publish, as the domain hands it over. The spool never looks inside `body`; the publisher renders
/// the final payload with `run`, the `seq` assigned at commit, and `ts`.
public struct Reading: Sendable, Hashable {
    public var readingClass: ReadingClass
    /// The MQTT topic.
    public var topic: String
    /// Opaque payload bytes.
    public var body: [UInt8]
    /// MQTT QoS 0, 1 or 2.
    public var qos: UInt8
    public var retain: Bool
    /// When the reading was taken, Unix seconds. Only informative: order is `seq`, so a wall-clock jump never
    /// reorders or expires the backlog.
    public var ts: Double
    /// Whether the wall clock was synchronised (NTP) when `ts` was taken. A Raspberry Pi has no RTC: until NTP
    /// answers, `ts` may be decades off.
    public var clockSynchronized: Bool
    /// MQTT 5 message expiry interval, seconds after `ts`; nil = never expires.
    public var expiry: Double?
    /// The gateway run (changes at each start) that took the reading; kept on replay.
    public var run: String

    public init(
        _ readingClass: ReadingClass, topic: String, body: [UInt8], qos: UInt8 = 1, retain: Bool = false,
        ts: Double, clockSynchronized: Bool, expiry: Double? = nil, run: String
    ) {
        self.readingClass = readingClass
        self.topic = topic
        self.body = body
        self.qos = qos
        self.retain = retain
        self.ts = ts
        self.clockSynchronized = clockSynchronized
        self.expiry = expiry
        self.run = run
    }

    /// Fixed per-row cost the size budget charges on top of the variable fields: the row header, integers, the
    /// timestamp and the b-tree cell pointer come to roughly this much in SQLite's record format.
    public static let rowOverhead = 32

    /// The bytes this reading is charged against `SpoolConfiguration.maxBytes`.
    public var storedSize: Int { body.count + topic.utf8.count + run.utf8.count + Reading.rowOverhead }
}

/// A reading that is durable: it has its `seq`, which is per gateway, monotonic, assigned at commit and never reused.
public struct SpooledReading: Sendable, Hashable {
    public var seq: UInt64
    public var reading: Reading

    public init(seq: UInt64, reading: Reading) {
        self.seq = seq
        self.reading = reading
    }
}
