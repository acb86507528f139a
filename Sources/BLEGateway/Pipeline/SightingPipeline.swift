import BLEConfiguration
import BLEDomain
import BLEHCI
import BLETransport

/// A sighting in, what it makes out: the scan filter, identity resolution, ranging, regions, sensors and the raw
/// stream's rate, with the state they keep. Pure: it holds no lock, reads no clock and does no I/O. The runtime keeps
/// it behind one lock, passes the time in, and spools what comes out (docs/ARCHITECTURE.md, "The pipeline").
struct SightingPipeline: Sendable {
    /// What the configuration in force says of the pipeline: replaced whole with it.
    struct Settings: Sendable {
        var filter: ScanFilter
        var rawAdvertisements: Bool
        var rawMaxPerSecond: Double
        /// `sensors.enabled` (local only).
        var sensors: Bool
        /// `sensors.bindkeys` (local only, never logged).
        var sensorKeys: SensorKeys

        /// At start: a filter that does not parse is the configuration's error, thrown.
        init(_ c: GatewayConfiguration) throws { self.init(c, filter: try ScanFilter(parsing: c.scan.filters)) }

        /// The settings of a new configuration in force; a filter that does not parse keeps the one in force (a
        /// remote document was validated before it got here).
        func replaced(by c: GatewayConfiguration) -> Settings {
            Settings(c, filter: (try? ScanFilter(parsing: c.scan.filters)) ?? filter)
        }

        private init(_ c: GatewayConfiguration, filter: ScanFilter) {
            self.filter = filter
            rawAdvertisements = c.publishing.rawAdvertisements
            rawMaxPerSecond = c.publishing.rawMaxPerSecond
            sensors = c.sensors.enabled
            sensorKeys = SensorKeys(octets: c.sensors.bindkeys)
        }
    }

    /// What one sighting made (its sensor reading, if any, goes to the caller's storage: a `SensorReading` keeps its
    /// values inline, and copying one out for every sighting took 3.5 % of the run path's perf samples; docs/BENCHMARKS.md).
    struct Outcome: Sendable {
        /// Region changes (state readings: committed before they are published).
        var regionEvents: [RegionEvent] = []
        /// It goes on the raw stream (`…/raw/<address>`).
        var raw = false
    }

    /// What the end of a ranging interval made.
    struct IntervalEnd: Sendable {
        /// One summary per beacon heard (empty until an interval ends).
        var updates: [RangingUpdate]
        /// The newest unencrypted Eddystone-TLM per address of the interval that ended.
        var telemetry: [BDAddress: EddystoneTLM.Plain]
        var regionEvents: [RegionEvent]
    }

    private(set) var settings: Settings
    private(set) var ranging: RangingEngine
    private(set) var regions: RegionMonitor
    /// Resolvable private addresses → identity addresses.
    private(set) var resolver: PrivateAddressResolver
    private(set) var sensorGate: SensorPublishGate
    private(set) var raw = RawRateBucket()
    /// The newest unencrypted Eddystone-TLM per address in the interval under way: published with that address's
    /// summaries at the interval's end, then cleared (bounded by the addresses heard in one, and by `telemetryBound`).
    private var telemetry: [BDAddress: EddystoneTLM.Plain] = [:]
    /// TLM frames forgotten when the table reached its bound (health `scan.telemetry_discarded`).
    private(set) var telemetryDiscarded = 0
    static let telemetryBound = 4096
    /// The ticker rests (`rest()`): it ends no interval until an event gives one something to end (`restEnded()`).
    private(set) var tickerResting = false

    /// Built once, from the configuration in force at start.
    init(_ c: GatewayConfiguration, at now: Duration) throws {
        settings = try Settings(c)
        ranging = RangingEngine(configuration: c.rangingConfiguration)
        regions = RegionMonitor(regions: c.regions, at: now)
        resolver = PrivateAddressResolver(keys: c.identityKeys)
        sensorGate = SensorPublishGate(configuration: c.sensors.gateConfiguration)
    }

    // MARK: Events

    /// One sighting that reached the pipeline (peripheral links and tracing saw it before). `sensor` is set to a decoded
    /// sensor frame the gate let through (repeats, replays and the minimum interval stop here), and left alone otherwise.
    mutating func observe(_ s: Sighting, at now: Duration, sensor: inout SensorReading?) -> Outcome {
        guard settings.filter.matches(s) else { return Outcome() }
        var out = Outcome()
        let identity = resolver.identity(of: s)
        let rssi = ranging.observe(s, as: identity, at: now)
        if case .eddystoneTLM(.plain(let tlm))? = s.beacon {
            if telemetry.count >= Self.telemetryBound {  // a bound, should intervals stop ending
                telemetryDiscarded += telemetry.count
                telemetry.removeAll()
            }
            telemetry[s.address] = tlm
        }
        out.regionEvents = regions.observe(
            identity, name: regions.wantsNames ? s.advertisement.nameBytes : nil, rssi: rssi, at: now)
        if settings.rawAdvertisements { out.raw = raw.take(rate: settings.rawMaxPerSecond, at: now) }
        // A sensor's advertisement: decoded only if the one decoding pass found a sensor frame, then gated.
        if settings.sensors, s.advertisement.sensorSource != nil || s.advertisement.manufacturerData != nil,
            let r = SensorDecoder.decode(s.advertisement, address: s.address, keys: settings.sensorKeys),
            sensorGate.admit(r, from: s.address, at: now) == .publish
        {
            sensor = r
        }
        return out
    }

    /// The ranging interval's clock: summaries when an interval ended, and region timeouts. Regions are not timed
    /// while the adapter is not scanning (`scanning` false): an outage is not an exit (it ends in `adapterScanning`).
    mutating func tick(at now: Duration, scanning: Bool) -> IntervalEnd {
        let updates = ranging.tick(at: now)
        // Taken only when an interval ended (the tick returns updates only then): until then it accumulates.
        var ended: [BDAddress: EddystoneTLM.Plain] = [:]
        if !updates.isEmpty { swap(&ended, &telemetry) }
        return IntervalEnd(updates: updates, telemetry: ended, regionEvents: scanning ? regions.tick(at: now) : [])
    }

    /// The adapter scans again after an outage: deaf until now, so regions are determined afresh (an enter or exit
    /// follows only a real change).
    mutating func adapterScanning(at now: Duration) -> [RegionEvent] { regions.resetToUnknown(at: now) }

    // MARK: The ticker's rest

    /// Nothing an interval's end could change: no beacon tracked, no telemetry waiting for its interval, every region
    /// outside. An idle gateway then wakes for no summary (issue #42, "idle is idle": the ranging interval's tick is
    /// the protocol's own only when there is something to range).
    var atRest: Bool { ranging.trackedCount == 0 && telemetry.isEmpty && regions.atRest }

    /// The ticker asks to rest until an event gives an interval something to end: granted when at rest.
    mutating func rest() -> Bool {
        tickerResting = atRest
        return tickerResting
    }

    /// After an event (a sighting, the adapter scanning again): true, once, when it ended the ticker's rest; the
    /// caller wakes the ticker.
    mutating func restEnded() -> Bool {
        guard tickerResting, !atRest else { return false }
        tickerResting = false
        return true
    }

    /// An identity key enrolled while running.
    mutating func enrolled(_ key: IdentityResolvingKey) { resolver.add(key) }

    /// A new configuration in force: the settings are replaced; the ranging engine is built again only when its
    /// parameters changed (its beacons are then tracked afresh), the region monitor only when the regions did
    /// (unchanged regions keep their state).
    mutating func reconfigure(from before: GatewayConfiguration, to c: GatewayConfiguration, at now: Duration) {
        settings = settings.replaced(by: c)
        if before.ranging != c.ranging
            || before.publishing.rangingIntervalSeconds != c.publishing.rangingIntervalSeconds
        {
            ranging = RangingEngine(configuration: c.rangingConfiguration)
        }
        if before.regions != c.regions { regions = regions.reconfigured(to: c.regions, at: now) }
    }

    // MARK: Region changes as readings

    /// Region events as retained state changes: each `determined` with the enter or exit that follows it, if any.
    static func regionChanges(_ events: [RegionEvent]) -> [(
        event: RegionEvent, state: RegionState,
        change: GatewayReadings.RegionChange
    )] {
        var out: [(event: RegionEvent, state: RegionState, change: GatewayReadings.RegionChange)] = []
        for (i, e) in events.enumerated() {
            guard case .determined(let regionState) = e.kind else { continue }
            var change = GatewayReadings.RegionChange.determined
            if i + 1 < events.count, events[i + 1].region == e.region {
                switch events[i + 1].kind {
                case .entered: change = .enter
                case .exited: change = .exit
                case .determined: break
                }
            }
            out.append((e, regionState, change))
        }
        return out
    }
}
