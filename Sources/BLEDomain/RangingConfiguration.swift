/// How RSSI becomes distance and proximity, and how often results leave. Every field has a
/// default that suits the simulator's office (log-distance path loss, σ = 4 dB shadowing); a site
/// survey refines `pathLossExponent` and the calibrations. See docs/design/ranging.md.
public struct RangingConfiguration: Sendable {
    /// n in RSSI = P₁ₘ − 10·n·log10(d): 2 in free space, 1.6–1.8 in corridors, 2.5–4 through walls.
    public var pathLossExponent = 2.0
    /// RSSI at 1 m used when a beacon advertises none, or a nonsense one.
    public var defaultRSSIAt1m = -59.0
    /// Advertised calibrations outside this range (dBm at 1 m) are not trusted: 0 or +20 dBm "at
    /// 1 m" is a transmit power or a misconfigured beacon, not a received power.
    public var plausibleRSSIAt1m: ClosedRange<Double> = -100.0 ... -20.0
    /// This receiver's gain error, dB, added to every RSSI before it is ranged. Receivers differ by a few dB (antenna,
    /// enclosure, front end), and 2 dB is 23 % of distance at n = 2.2: a gateway that reads 2 dB low sets +2.
    /// The interval's raw moments (`rssi_raw_mean`) stay as received.
    public var rssiOffsetDB = 0.0
    /// Per-beacon or per-model calibrations (RSSI at 1 m), first match wins, applied before the
    /// frame's own value. Matched when a beacon is first tracked (name prefixes: on a named sighting).
    public var calibrationOverrides: [CalibrationOverride] = []

    /// Proximity bands by estimated distance (metres): immediate below the first, near below the second.
    public var immediateBelow = 0.5
    public var nearBelow = 3.0
    /// A proximity changes only once the distance is this fraction past the band's edge, so a
    /// beacon standing at 3 m does not alternate near/far.
    public var proximityHysteresis = 0.1

    /// The filter (docs/design/ranging.md, "Filter").
    public var filter = RangingFilterConfiguration()

    /// Length of a ranging interval: one update per tracked beacon per interval (see `publishing`).
    public var interval: Duration = .seconds(1)
    /// Not heard for this long: one update with proximity `unknown`, then silence.
    public var unknownAfter: Duration = .seconds(5)
    /// Not heard for this long: forgotten, its memory freed.
    public var forgetAfter: Duration = .seconds(60)
    /// Beacons tracked at most; past it the least recently heard is evicted (and counted).
    public var capacity = 20_000

    /// Which interval updates are emitted.
    public var publishing = RangingPublishing.everyInterval

    public init() {}
}

/// A calibration for the beacons a matcher covers: a single beacon (UUID+major+minor, address) or
/// a model (a UUID or namespace a vendor ships, a name prefix).
public struct CalibrationOverride: Hashable, Sendable {
    public var matcher: BeaconMatcher
    /// Received power at 1 m, dBm.
    public var rssiAt1m: Double

    public init(_ matcher: BeaconMatcher, rssiAt1m: Double) {
        self.matcher = matcher
        self.rssiAt1m = rssiAt1m
    }
}

/// Rate control for ranging updates, so that 5,000 standing beacons do not flood the broker.
public enum RangingPublishing: Hashable, Sendable {
    /// Every tracked beacon heard (or held) in an interval gets an update.
    case everyInterval
    /// An update only when the proximity changes, or the distance moved by more than
    /// `distanceFraction` of the last published one (and at least `minimumDistance` metres), or
    /// `heartbeat` has passed since the last update.
    case onChange(distanceFraction: Double = 0.2, minimumDistance: Double = 0.3, heartbeat: Duration = .seconds(60))
}

/// The constant-velocity Kalman filter over distance (docs/design/ranging.md).
public struct RangingFilterConfiguration: Hashable, Sendable {
    /// σ of one RSSI reading about the path-loss model, dB (the shadowing; 4 dB indoors is typical).
    public var measurementSigmaDB = 4.0
    /// Acceleration noise density of a beacon that stands still or drifts, per square metre of
    /// distance (1/s³): a filter time constant of several seconds at any range.
    public var quietAcceleration = 2e-5
    /// Acceleration noise density of a walking person at a turn, m²/s³; the filter moves between
    /// the two as its innovations say (a maneuver detector).
    public var maneuverAcceleration = 4.0
    /// The normalised innovation y/√S, smoothed over about `1/innovationSmoothing` readings, above
    /// which (in magnitude) the filter starts treating the beacon as moving; fully at twice it.
    /// Its spread while the model fits is √(α/(2−α)) ≈ 0.33 for α = 0.2.
    public var maneuverThreshold = 0.5
    public var innovationSmoothing = 0.2
    /// A person's top speed, m/s: velocity estimates are clamped to it.
    public var maximumSpeed = 3.0

    public init() {}
}
