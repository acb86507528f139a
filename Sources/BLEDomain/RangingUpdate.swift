import BLEHCI
import BLETransport

/// How near a beacon is, in the bands of `RangingConfiguration` (CoreLocation's CLProximity).
public enum Proximity: String, Hashable, Sendable, CaseIterable {
    case immediate, near, far, unknown
}

/// Where the RSSI-at-1-m a beacon is ranged with came from.
public enum CalibrationSource: String, Hashable, Sendable {
    /// A `CalibrationOverride` of the configuration.
    case configuration
    /// The frame's own calibrated power (iBeacon measured power, AltBeacon reference RSSI,
    /// Eddystone's power at 0 m − 41 dB, or the TX Power Level − 41 dB).
    case frame
    /// The frame carried none: `defaultRSSIAt1m`.
    case `default`
    /// The frame's value was outside `plausibleRSSIAt1m` and was not trusted: `defaultRSSIAt1m`.
    case untrustedFrame = "untrusted-frame"
}

/// One beacon's ranging result for one interval.
public struct RangingUpdate: Sendable {
    public var identity: BeaconIdentity
    /// The end of the interval (the injected clock's `now()`).
    public var time: Duration
    /// The address it was last heard from (after a rotation, the newest).
    public var address: BDAddress
    /// Readings received in the interval, including those without an RSSI.
    public var samples: Int
    /// The filter's RSSI at `time` (dBm), nil while no reading has carried an RSSI or when unknown.
    public var filteredRSSI: Double?
    /// The calibrated received power at 1 m used, dBm, and where it came from.
    public var rssiAt1m: Double
    public var calibration: CalibrationSource
    /// Metres, and one standard deviation of it (the filter's; the path-loss model's own error is not in it).
    public var distance: Double?
    public var accuracy: Double?
    public var proximity: Proximity
    /// The interval's raw readings that carried an RSSI: their mean (dBm) and sample variance (dB²), nil without
    /// such readings (the variance also with only one).
    public var rawRSSIMean: Double? = nil
    public var rawRSSIVariance: Double? = nil
}

/// Counters for the status topic.
public struct RangingStatistics: Sendable, Hashable {
    public var tracked = 0
    public var samples = 0
    /// Readings whose RSSI was 127 ("not available").
    public var samplesWithoutRSSI = 0
    /// Beacons evicted, least recently heard first, because `capacity` was reached.
    public var evictions = 0
    /// Beacons forgotten after `forgetAfter` of silence.
    public var forgotten = 0
    /// Beacons whose advertised calibration was not trusted.
    public var untrustedCalibrations = 0
    /// Updates withheld by `RangingPublishing.onChange`.
    public var suppressedUpdates = 0
}
