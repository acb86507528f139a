import BLEDomain

/// Where the gateway's sightings come from: an adapter being brought up, scanned and watched.
/// `run` returns or throws when the adapter is lost; the runtime reports that and runs it again.
public protocol SightingSource: Sendable {
    /// Runs until cancelled or until the adapter fails. Reports every adapter state change through
    /// `adapter`, and every sighting that passed the scan filter through `sighting`.
    func run(
        adapter: @escaping @Sendable (AdapterReport) -> Void,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async throws

    /// Counters for the health topic.
    var counters: SightingSourceCounters { get }
}

public struct SightingSourceCounters: Sendable, Equatable {
    public var reports = 0
    public var malformedEvents = 0
    public init(reports: Int = 0, malformedEvents: Int = 0) {
        self.reports = reports
        self.malformedEvents = malformedEvents
    }
}

/// A source that supervises its adapters (exclusive mode): the recovery ladders' counters for the health topic.
public protocol AdapterLifecycleReporting: Sendable {
    /// All ladders' counters together (nil while nothing is supervised: shared mode, a capture).
    var lifecycleStatistics: AdapterLifecycle.Statistics? { get }
    /// With two adapters: each one's counters, and how often a duty moved between them.
    var adapterSlots: AdapterSlotsStatistics? { get }
}

public struct AdapterSlotsStatistics: Sendable {
    public var handovers: Int
    /// ("primary", …), ("secondary", …), in that order.
    public var slots: [(String, AdapterLifecycle.Statistics)]
}
