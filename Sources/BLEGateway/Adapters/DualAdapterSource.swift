import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Two adapters owned by the gateway (exclusive mode), as gateways with two dongles run them: the primary scans, the
/// secondary makes the peripheral connections. Each adapter has its own supervisor and recovery ladder; when one is
/// not usable the other carries both duties, and gives the duty back once the first has been usable for the
/// handback time (`AdapterRoles`).
///
/// Reports: each adapter's state on `…/adapters/<slot>` (with its `roles`), and on `…/adapter` the adapter that
/// scans for the gateway now — so `…/adapter` says whether the gateway hears advertising, whichever dongle it is.
public final class DualAdapterSource: SightingSource, ScanParametersUpdatable, AdapterLifecycleReporting,
    @unchecked Sendable
{
    typealias Slot = AdapterRoles.Slot

    let specs: [Slot: DeviceSpec]
    let clock: any BLEClock
    let logger: Logger
    private let supervisors: [Slot: AdapterSupervisor]
    /// The roles' machine and each adapter's last report: one lock, so a picture is composed from one moment.
    private struct Picture {
        var roles: AdapterRoles
        var reports: [Slot: AdapterReport] = [:]
    }
    private let picture: Locked<Picture>
    /// Held while reports are composed and handed on, so the runtime never gets an older picture after a newer one.
    private let emitting = Locked(())
    private let inbox: AsyncStream<AdapterRoles.Event>
    private let inboxContinuation: AsyncStream<AdapterRoles.Event>.Continuation

    /// - Parameters:
    ///   - options: per adapter (capture paths, a bound address).
    ///   - role: the peripheral links; served by whichever adapter carries the connect duty.
    ///   - handback: how long an adapter that came back must stay usable before it gets its duty back.
    public init(
        primary: DeviceSpec, secondary: DeviceSpec,
        options: [AdapterRoles.Slot: TransportOptions] = [:], scan: GatewayConfiguration.Scan,
        clock: any BLEClock, logger: Logger,
        lifecycle: AdapterLifecycle.Configuration = AdapterLifecycle.Configuration(),
        role: (any ControllerRole)? = nil, handback: Duration = .seconds(10)
    ) {
        specs = [.primary: primary, .secondary: secondary]
        self.clock = clock
        self.logger = logger
        picture = Locked(Picture(roles: AdapterRoles(handback: handback)))
        var supervisors: [Slot: AdapterSupervisor] = [:]
        for (slot, spec) in [(Slot.primary, primary), (.secondary, secondary)] {
            var l = logger
            l[metadataKey: "adapter"] = "\(slot)"
            // No duty until the coordinator gives one: an adapter is usable once brought up, then assigned.
            supervisors[slot] = AdapterSupervisor(
                spec: spec, mode: .exclusive, options: options[slot] ?? TransportOptions(),
                parameters: scan.parameters, clock: clock, logger: l, configuration: lifecycle, role: role,
                duties: [])
        }
        self.supervisors = supervisors
        (inbox, inboxContinuation) = AsyncStream.makeStream(of: AdapterRoles.Event.self)
    }

    // MARK: SightingSource

    public var counters: SightingSourceCounters {
        supervisors.values.reduce(SightingSourceCounters()) { $0 + $1.counters }
    }

    public func run(
        adapter: @escaping @Sendable (AdapterReport) -> Void,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async throws {
        await withTaskGroup(of: Void.self) { group in
            for (slot, supervisor) in supervisors {
                group.addTask {
                    await supervisor.run(
                        adapter: { [self] r in received(r, from: slot, adapter: adapter) },
                        sighting: sighting)
                }
            }
            group.addTask { await self.coordinate(adapter: adapter) }
            await group.next()  // each runs until cancelled
            group.cancelAll()
        }
        inboxContinuation.finish()
        throw CancellationError()
    }

    /// One adapter's lifecycle published a state: note it, tell the coordinator, pass the picture on.
    private func received(_ r: AdapterReport, from slot: Slot, adapter: @escaping @Sendable (AdapterReport) -> Void) {
        picture.withLock { $0.reports[slot] = r }
        inboxContinuation.yield(r.state == .poweredOn ? .usable(slot) : .unusable(slot))
        emit(adapter)
    }

    /// Carries out `AdapterRoles`' assignments, one at a time and in order (a duty is stopped on one adapter
    /// before it starts on the other).
    private func coordinate(adapter: @escaping @Sendable (AdapterReport) -> Void) async {
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        for await event in inbox {
            if Task.isCancelled { break }
            let actions = picture.withLock { $0.roles.handle(event, now: clock.now()) }
            for action in actions {
                switch action {
                case .assign(let slot, let duties):
                    logger.info("adapter \(specs[slot]!) (\(slot)): duties \(duties)")
                    await supervisors[slot]!.assign(duties)
                    emit(adapter)
                case .wait(let deadline):
                    timer?.cancel()
                    timer = Task { [clock, inboxContinuation] in
                        do { try await clock.sleep(until: deadline) } catch { return }
                        inboxContinuation.yield(.timePassed)
                    }
                }
            }
        }
    }

    /// Each adapter's report with its roles (`…/adapters/<slot>`), then the gateway's: the adapter that scans.
    private func emit(_ adapter: @Sendable (AdapterReport) -> Void) {
        emitting.withLock { _ in
            let (known, duties) = picture.withLock { ($0.reports, $0.roles.duties) }
            var perSlot: [Slot: AdapterReport] = [:]
            for slot in Slot.allCases {
                guard var r = known[slot] else { continue }
                let d = duties[slot] ?? []
                r.slot = slot
                r.roles = d
                if !d.contains(.scan) { r.scanning = .off }
                perSlot[slot] = r
                var scoped = r
                scoped.scope = .slot
                adapter(scoped)
            }
            let scanning = Slot.allCases.first {
                perSlot[$0]?.state == .poweredOn && duties[$0]?.contains(.scan) == true
            }
            if let gateway = perSlot[scanning ?? .primary] ?? perSlot[.secondary] { adapter(gateway) }
        }
    }

    // MARK: ScanParametersUpdatable

    public var appliesScanParametersLive: Bool { true }

    public func updateScan(_ new: GatewayConfiguration.Scan) {
        for s in supervisors.values { s.updateScan(new.parameters) }
    }

    // MARK: AdapterLifecycleReporting

    public var lifecycleStatistics: AdapterLifecycle.Statistics? {
        supervisors.values.map(\.statistics).reduce(AdapterLifecycle.Statistics(), +)
    }

    /// In slot order, so that the judge compares each ladder with itself from one sample to the next.
    public var ladders: [LadderProgress] { Slot.allCases.compactMap { supervisors[$0]?.progress } }

    public var adapterSlots: AdapterSlotsStatistics? {
        AdapterSlotsStatistics(
            handovers: picture.withLock { $0.roles.statistics.handovers },
            slots: Slot.allCases.map { ($0.rawValue, supervisors[$0]!.statistics) })
    }
}

extension AdapterLifecycle.Statistics {
    /// Two adapters' counters as one (the health topic's `adapter` totals).
    static func + (a: Self, b: Self) -> Self {
        var s = a
        s.attempts.merge(b.attempts, uniquingKeysWith: +)
        s.recoveries.merge(b.recoveries, uniquingKeysWith: +)
        s.climbs += b.climbs
        s.exhausted += b.exhausted
        s.silences += b.silences
        s.lastTimeToRecover = b.lastTimeToRecover ?? a.lastTimeToRecover
        s.totalTimeToRecover += b.totalTimeToRecover
        return s
    }
}
