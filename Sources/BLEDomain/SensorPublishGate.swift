import BLEHCI
import BLETransport

/// Decides which decoded sensor frames become readings. A sensor repeats each packet many times (25
/// identical advertisements in seconds is common) and some send 100 a second: only what is new is
/// published, at most once per `minimumInterval` per sensor, and every frame held back is counted.
///
/// Takes events (a decoded frame, with the injected clock's time) and returns a decision; the caller
/// publishes. State per sensor: the last frame's counter, fingerprint and time, the highest encryption
/// counter, when it last published. Bounded by `capacity` sensors (the least recently heard is forgotten).
public struct SensorPublishGate: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// At most one reading per sensor this often; 0: every new packet.
        public var minimumInterval: Duration = .seconds(1)
        /// The same packet (same counter, or with no counter the same values) heard again within this window is a
        /// repeat; after it, the same values are a new reading (a sensor that only resends when something changes).
        public var repeatWindow: Duration = .seconds(10)
        public var capacity = 4096
        public init() {}
    }

    public enum Decision: Equatable, Sendable {
        case publish
        /// The same packet again.
        case repeatPacket
        /// An encrypted frame whose counter went backwards: replayed or forged, never published.
        case replay
        /// New, but within the sensor's minimum interval.
        case rateLimited
    }

    /// Counted since start; published in health (`sensors`).
    public struct Statistics: Sendable, Equatable {
        public var decoded = 0
        public var published = 0
        public var repeats = 0
        public var replays = 0
        public var rateLimited = 0
        public var undecryptable = 0
        public var outOfRange = 0
        public var unknownObjects = 0
        public var truncated = 0
        public var forgotten = 0
        public init() {}
    }

    struct Sensor: Sendable {
        var counter: UInt32?
        var fingerprint: Int
        var lastHeard: Duration
        var lastPublished: Duration?
        var encryptionCounter: UInt32?
    }

    public var configuration: Configuration
    public private(set) var statistics = Statistics()
    var sensors: [BDAddress: Sensor] = [:]

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var trackedCount: Int { sensors.count }

    /// BTHome's rule for counters that restart (battery change, wrap): a counter below 100 is a restart, not a replay.
    public static let counterRestartBelow: UInt32 = 100

    public mutating func admit(_ r: SensorReading, from address: BDAddress, at now: Duration) -> Decision {
        statistics.decoded += 1
        if r.issues.isUndecryptable { statistics.undecryptable += 1 }
        if r.issues.contains(.outOfRange) { statistics.outOfRange += 1 }
        if r.issues.contains(.unknownObject) { statistics.unknownObjects += 1 }
        if r.issues.contains(.truncated) { statistics.truncated += 1 }

        var fingerprint = Hasher()
        fingerprint.combine(r)
        let print = fingerprint.finalize()
        guard var s = sensors[address] else {
            if sensors.count >= configuration.capacity { forgetOldest() }
            sensors[address] = Sensor(
                counter: r.counter, fingerprint: print, lastHeard: now, lastPublished: now,
                encryptionCounter: r.issues.isUndecryptable ? nil : r.encryptionCounter)
            statistics.published += 1
            return .publish
        }
        defer { sensors[address] = s }
        let withinWindow = now - s.lastHeard < configuration.repeatWindow
        s.lastHeard = now
        // Only a frame that decrypted proves its counter: an undecryptable one must not move the guard.
        if let e = r.encryptionCounter, !r.issues.isUndecryptable {
            if let last = s.encryptionCounter, e < last, e >= Self.counterRestartBelow {
                statistics.replays += 1
                return .replay
            }
            if let last = s.encryptionCounter, e == last {
                statistics.repeats += 1
                return .repeatPacket
            }
            s.encryptionCounter = e
        }
        let same = r.counter != nil ? r.counter == s.counter : print == s.fingerprint
        s.counter = r.counter
        s.fingerprint = print
        if same && withinWindow {
            statistics.repeats += 1
            return .repeatPacket
        }
        // An event (a button press, a dimmer turn) is not a sample to thin: every new one is published.
        if !Self.carriesEvent(r), let last = s.lastPublished, now - last < configuration.minimumInterval {
            statistics.rateLimited += 1
            return .rateLimited
        }
        s.lastPublished = now
        statistics.published += 1
        return .publish
    }

    /// Whether the frame reports an event (BTHome button or dimmer, other than "none").
    static func carriesEvent(_ r: SensorReading) -> Bool {
        r.contains { ($0.quantity == .buttonEvent || $0.quantity == .dimmerEvent) && $0.value != 0 }
    }

    mutating func forgetOldest() {
        guard let oldest = sensors.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key else { return }
        sensors[oldest] = nil
        statistics.forgotten += 1
    }
}
