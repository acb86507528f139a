import BLEDomain
import BLEHCI
import BLEHost
import BLETransport

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
    /// Advertising reports a live source dropped because the host fell behind, by the stage whose queue was full
    /// (a source that can wait — a capture, a socket — is waited for and drops nothing).
    public var dropped = DroppedReports()
    /// Extended advertisements given up while reassembling their fragments (`ExtendedAdvertisingReassembler`).
    public var reassembly = ReassemblyDrops()

    public init(
        reports: Int = 0, malformedEvents: Int = 0, dropped: DroppedReports = DroppedReports(),
        reassembly: ReassemblyDrops = ReassemblyDrops()
    ) {
        self.reports = reports
        self.malformedEvents = malformedEvents
        self.dropped = dropped
        self.reassembly = reassembly
    }

    /// What one scanning session (transport, controller, and its one scanner) counted, added to these.
    mutating func add(session scanner: Scanner) {
        add(scanner: scanner)
        add(link: scanner.controller)
    }

    /// What one scanner counted. A session may run several scanners in turn (a scan-parameter change, scanning
    /// enabled again, a controller reset): each is added once, when it ends.
    mutating func add(scanner: Scanner) {
        let s = scanner.statistics
        reports += s.assembler.reports
        malformedEvents += s.assembler.malformedAdvertisingEvents + s.assembler.malformedPackets
        dropped.scanner += s.droppedReports
        reassembly.evicted += s.assembler.reassembly.evicted
        reassembly.expired += s.assembler.reassembly.expired
        reassembly.oversized += s.assembler.reassembly.oversized
    }

    /// What a session's controller and transport dropped, over the whole session: added once, when the session ends
    /// (adding them with each scanner counted a session's drops again at every scanner restart).
    mutating func add(link controller: HCIController) {
        dropped.controller += controller.statistics.droppedEvents
        dropped.transport += (controller.transport as? any TransportStatisticsProviding)?.statistics.droppedReports ?? 0
    }

    static func + (a: Self, b: Self) -> Self {
        Self(
            reports: a.reports + b.reports, malformedEvents: a.malformedEvents + b.malformedEvents,
            dropped: DroppedReports(
                transport: a.dropped.transport + b.dropped.transport,
                controller: a.dropped.controller + b.dropped.controller,
                scanner: a.dropped.scanner + b.dropped.scanner),
            reassembly: ReassemblyDrops(
                evicted: a.reassembly.evicted + b.reassembly.evicted,
                expired: a.reassembly.expired + b.reassembly.expired,
                oversized: a.reassembly.oversized + b.reassembly.oversized))
    }
}

/// Extended advertisements whose fragments were never joined (schema/v1/health.json, `scan.reassembly`): the oldest
/// evicted for room, the next fragment too late, or the chain longer than an advertisement may be.
public struct ReassemblyDrops: Sendable, Equatable {
    public var evicted = 0
    public var expired = 0
    public var oversized = 0
    public init(evicted: Int = 0, expired: Int = 0, oversized: Int = 0) {
        self.evicted = evicted
        self.expired = expired
        self.oversized = oversized
    }
}

/// Reports dropped between the fd and the sighting sink, per stage (schema/v1/health.json, `scan.dropped`).
public struct DroppedReports: Sendable, Equatable {
    /// The transport's reader found the queue to the controller full.
    public var transport = 0
    /// The controller found the scanner's queue full.
    public var controller = 0
    /// The scanner found the consumer's queue full.
    public var scanner = 0
    public var total: Int { transport + controller + scanner }
    public init(transport: Int = 0, controller: Int = 0, scanner: Int = 0) {
        self.transport = transport
        self.controller = controller
        self.scanner = scanner
    }
}

/// What one recovery ladder has done (reports heard, steps tried, silences noticed) and the next deadline it waits
/// for (the source's clock; nil when it waits only for events).
public struct LadderProgress: Sendable, Equatable {
    public var activity: Int
    public var deadline: Duration?

    public init(activity: Int, deadline: Duration?) {
        self.activity = activity
        self.deadline = deadline
    }
}

/// A source that supervises its adapters (exclusive mode): the recovery ladders' counters for the health topic.
public protocol AdapterLifecycleReporting: Sendable {
    /// All ladders' counters together (nil while nothing is supervised: a capture).
    var lifecycleStatistics: AdapterLifecycle.Statistics? { get }
    /// Each ladder's progress, for the service watchdog's judge (`Liveness`), which judges each on its own: with two
    /// adapters, one's reports must not hide the other's wedged ladder. Empty while nothing is supervised.
    var ladders: [LadderProgress] { get }
    /// With two adapters: each one's counters, and how often a duty moved between them.
    var adapterSlots: AdapterSlotsStatistics? { get }
}

public struct AdapterSlotsStatistics: Sendable {
    public var handovers: Int
    /// ("primary", …), ("secondary", …), in that order.
    public var slots: [(String, AdapterLifecycle.Statistics)]
}
