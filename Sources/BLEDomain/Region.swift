/// A region to monitor: the beacons it covers and when being near them counts as inside.
///
/// Enter needs a sighting whose (filtered) RSSI is at least `enterRSSI` (any sighting when nil);
/// staying needs sightings at least `exitRSSI` (default: `enterRSSI`; any sighting when both are
/// nil). The region is left after `exitTimeout` without any sighting, or after `exitDwell` without
/// a sighting strong enough to stay: the band between the two thresholds and the dwell are the
/// hysteresis that keeps a tag standing at the edge from flapping.
public struct Region: Hashable, Sendable {
    /// Used in events and topics.
    public var id: String
    public var matcher: BeaconMatcher
    public var enterRSSI: Double?
    public var exitRSSI: Double?
    public var exitDwell: Duration
    public var exitTimeout: Duration

    public init(
        id: String, matcher: BeaconMatcher, enterRSSI: Double? = nil, exitRSSI: Double? = nil,
        exitDwell: Duration = .seconds(5), exitTimeout: Duration = .seconds(10)
    ) {
        precondition(exitRSSI == nil || enterRSSI == nil || exitRSSI! <= enterRSSI!, "exit threshold above enter")
        self.id = id
        self.matcher = matcher
        self.enterRSSI = enterRSSI
        self.exitRSSI = exitRSSI
        self.exitDwell = exitDwell
        self.exitTimeout = exitTimeout
    }

    /// The threshold that keeps the region entered, if any.
    @usableFromInline var stayRSSI: Double? { exitRSSI ?? enterRSSI }
}

/// A region's state, as CoreLocation's didDetermineState reports it.
public enum RegionState: String, Hashable, Sendable {
    case unknown, inside, outside
}

/// What a region monitor reports.
public struct RegionEvent: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// The state became `state` (every change, including to and from unknown).
        case determined(RegionState)
        /// Outside → inside, also across an unknown spell (not for the first determination).
        case entered
        /// Inside → outside, likewise.
        case exited
    }

    public var region: String
    public var kind: Kind
    public var time: Duration
    /// The sighting that caused an enter; nil for time-driven changes.
    public var identity: BeaconIdentity?
}
