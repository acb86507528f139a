import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// A sighting source that takes new scan parameters while it runs (remote configuration applies them without a
/// restart of the gateway).
public protocol ScanParametersUpdatable: Sendable {
    /// Whether `updateScan` takes effect while running; if not, `config/state` lists the parameters under
    /// `restart_required`.
    var appliesScanParametersLive: Bool { get }
    /// The scan settings in force from now on (filters are the runtime's; active, interval and window count here).
    func updateScan(_ scan: GatewayConfiguration.Scan)
}

/// Sightings from an HCI controller: open the transport, bring the controller up (exclusive mode) or
/// follow the kernel's scan (shared mode), scan, decode. Every way this can fail ends in an adapter
/// state with a reason. A live adapter, in either mode, is one `AdapterSupervisor` session after another,
/// recovered in place; a capture is replayed once, here, and its end is the end of the run (a recording
/// has nothing to recover, and reopening it would replay it again).
public final class HCISightingSource: SightingSource, ScanParametersUpdatable, AdapterLifecycleReporting,
    @unchecked Sendable
{
    let spec: DeviceSpec
    let mode: AdapterMode
    let options: TransportOptions
    let clock: any BLEClock
    let logger: Logger
    /// The recovery ladder's settings; nil: no supervision (any failure ends `run`, the caller retries).
    let lifecycle: AdapterLifecycle.Configuration?
    /// Runs beside the scanner (peripheral links): on the controller in exclusive mode, through the kernel's L2CAP
    /// sockets in shared mode (the kernel owns the links there); a capture cannot make any.
    let role: (any ControllerRole)?
    /// The scan settings in force, the supervisor of a live adapter, and for a capture its scanner and what ended
    /// scanners counted: one lock, so a scanner's counts move into the totals in the step that takes it out of view.
    private struct Shared {
        var scan: GatewayConfiguration.Scan
        var supervisor: AdapterSupervisor?
        var counters = SightingSourceCounters()
        var current: Scanner?
    }
    private let shared: Locked<Shared>

    public init(
        spec: DeviceSpec, mode: AdapterMode, options: TransportOptions = TransportOptions(),
        scan: GatewayConfiguration.Scan, clock: any BLEClock, logger: Logger,
        lifecycle: AdapterLifecycle.Configuration? = AdapterLifecycle.Configuration(),
        role: (any ControllerRole)? = nil
    ) {
        self.role = role
        self.spec = spec
        self.mode = mode
        self.options = options
        self.shared = Locked(Shared(scan: scan))
        self.clock = clock
        self.logger = logger
        self.lifecycle = lifecycle
    }

    /// The recovery ladder's counters (nil while the source does not own the controller: shared mode, a capture).
    /// The scan settings in force (the last `updateScan`).
    public var scan: GatewayConfiguration.Scan { shared.withLock { $0.scan } }

    /// New scan parameters (active, interval, window) while running, without restarting the adapter: when the
    /// source supervises the controller (exclusive mode), its scanner is stopped and started again with them
    /// (AdapterSupervisor.updateScan), and every later start uses them. Thread-safe.
    public func updateScan(_ new: GatewayConfiguration.Scan) {
        shared.withLock { s -> AdapterSupervisor? in
            s.scan = new
            return s.supervisor
        }?.updateScan(new.parameters)
    }

    /// Supervised (exclusive mode): the scanner restarts with them. Shared mode or a capture: the host only
    /// listens, so the parameters are not its to set and nothing waits for a restart. Unsupervised exclusive
    /// (`lifecycle` nil): they apply when `run` is next called.
    public var appliesScanParametersLive: Bool { mode == .shared || spec.isCapture || lifecycle != nil }

    public var lifecycleStatistics: AdapterLifecycle.Statistics? { shared.withLock { $0.supervisor }?.statistics }
    public var ladders: [LadderProgress] { (shared.withLock { $0.supervisor }?.progress).map { [$0] } ?? [] }

    /// One adapter: no slots.
    public var adapterSlots: AdapterSlotsStatistics? { nil }

    public var counters: SightingSourceCounters {
        let (supervisor, counters) = shared.withLock { s in
            var c = s.counters
            if let scanner = s.current { c.add(session: scanner) }
            return (s.supervisor, c)
        }
        return supervisor?.counters ?? counters
    }

    public func run(
        adapter: @escaping @Sendable (AdapterReport) -> Void,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async throws {
        if let why = mode.refusal(for: spec) {
            adapter(AdapterReport(state: .unsupported, device: spec.description, mode: mode, reason: why))
            throw TransportError(.badSpec, why)
        }
        // A capture replays once and is never supervised; shared mode always is: its adapter's power, blocks and
        // removal are followed only there.
        let supervised =
            spec.isCapture ? nil : mode == .shared ? lifecycle ?? AdapterLifecycle.Configuration() : lifecycle
        if var lifecycle = supervised {
            // One adapter life for both modes: the lifecycle supervises the session, recovering in place; this
            // returns only when cancelled. In shared mode the session only listens, and the adapter is the
            // kernel's: the gateway never clears an rfkill block or resets the USB device under bluetoothd.
            if mode == .shared {
                lifecycle.allowRfkillUnblock = false
                lifecycle.allowUSBReset = false
            }
            let s = AdapterSupervisor(
                spec: spec, mode: mode, options: options, parameters: scan.parameters,
                clock: clock, logger: logger, configuration: lifecycle, role: role)
            shared.withLock { $0.supervisor = s }
            await s.run(adapter: adapter, sighting: sighting)
            throw CancellationError()
        }
        let device = spec.description
        let mode = mode
        // Unsupervised (a capture, or a lifecycle turned off): each state logged here, as the supervisor does.
        let capture = spec.isCapture
        let adapter: @Sendable (AdapterReport) -> Void = { [logger] r in
            logger.log(
                level: r.state == .poweredOn || capture ? .info : .warning,
                "adapter \(r.device): \(r.state)\(r.reason.map { " (\($0))" } ?? "")")
            adapter(r)
        }
        let report: @Sendable (AdapterReport.State, String) -> Void = { state, reason in
            adapter(AdapterReport(state: state, device: device, mode: mode, reason: reason))
        }
        let transport: any HCITransport
        do {
            transport = try openTransport(spec, mode: mode, clock: clock, options: options)
        } catch let e as TransportError {
            report(Self.state(for: e), e.message)
            throw e
        }
        let controller = HCIController(transport: transport, clock: clock)
        defer { transport.close() }
        // A capture: the commands were sent when it was recorded; the host only listens.
        let observer = spec.isCapture
        let parameters = scan.parameters
        // A listener must be subscribed before the controller reads anything, or a capture replayed as fast as
        // possible would be half gone before anyone listened.
        let earlyListener =
            observer
            ? Scanner(
                controller: controller, mode: .observer, parameters: parameters,
                logger: logger) : nil
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The scanner subscribed to the controller when it was made, before `controller.run()` reads anything.
            if let earlyListener { group.addTask { try await earlyListener.run() } }
            group.addTask { try await controller.run() }
            // Faults the scanner does not stop for: the controller must be brought up again. Not in a capture: the
            // host that recorded it answered them then, and stopping here would have `scan()` replay the file again.
            let faults = controller.events()
            group.addTask { [logger] in
                for await e in faults.ignoringErrors {
                    switch e {
                    case .event(.hardwareError(let code)) where observer:
                        logger.notice("the capture records a Hardware Error event (code 0x\(String(code, radix: 16)))")
                    case .event(.hardwareError(let code)):
                        let why = "Hardware Error event (code 0x\(String(code, radix: 16)))"
                        report(.resetting, why)
                        throw SourceStopped(.controllerFault, why)
                    case .commandTimedOut(let opcode, let after, _):
                        let why = "\(opcode) got no answer within \(after): the controller is stuck"
                        report(.resetting, why)
                        throw SourceStopped(.controllerFault, why)
                    default:
                        continue
                    }
                }
            }
            group.addTask { [logger, spec] in
                let scanner: Scanner
                var runningInfo: ControllerInfo?
                do {
                    if let earlyListener {
                        scanner = earlyListener
                        adapter(AdapterReport(state: .poweredOn, device: device, mode: mode, scanning: .observer))
                    } else {
                        let info = try await ControllerBringUp.run(controller, logger: logger)
                        scanner = Scanner(
                            controller: controller, mode: .control(info), parameters: parameters,
                            logger: logger)
                        runningInfo = info
                        adapter(
                            AdapterReport(
                                state: .poweredOn, device: device, mode: mode, address: info.address.description,
                                hciVersion: Int(info.version.hciVersion),
                                manufacturer: Int(info.version.companyIdentifier),
                                scanning: .of(info.supportsExtendedAdvertising)))
                    }
                } catch let e as HCIError {
                    report(e.code == .transportClosed ? .poweredOff : .unknown, e.description)
                    throw e
                }
                self.shared.withLock { $0.current = scanner }
                defer {
                    self.shared.withLock { s in
                        s.counters.add(session: scanner)
                        s.current = nil
                    }
                }
                if observer {
                    try? await Self.deliver(scanner.reports, to: sighting)  // its run() is above
                } else {
                    try await withThrowingTaskGroup(of: Void.self) { inner in
                        inner.addTask { try await scanner.run() }
                        if let role = self.role, let info = runningInfo {
                            inner.addTask { await role.serve(controller: controller, info: info) }
                        }
                        inner.addTask {
                            try? await Self.deliver(scanner.reports, to: sighting)
                        }
                        try await inner.waitForAll()
                    }
                }
                try Task.checkCancellation()
                // The reports ended without cancellation: the transport is gone (unplugged, end of a capture).
                if case .file(let path) = spec {
                    let why = "end of the capture"
                    report(.poweredOff, why)
                    throw SourceStopped(.endOfCapture, why, damage: Self.damage(of: transport, path: path))
                }
                let why = "the controller's transport ended"
                report(.poweredOff, why)
                throw SourceStopped(.transportEnded, why)
            }
            // The first to fail ends the others: a dead transport ends the scan, a fault restarts everything.
            defer { group.cancelAll() }
            while try await group.next() != nil {}
        }
    }

    /// Hands every report to the sighting sink until the scanner finishes them (or the task is cancelled).
    static func deliver(_ reports: StageQueue<ScanReport>, to sighting: @Sendable (Sighting) -> Void) async throws {
        for try await r in reports { sighting(Sighting(scanReport: r)) }
    }

    /// Why a source stopped without an error of a lower layer.
    public struct SourceStopped: Error, CustomStringConvertible, Sendable {
        public enum Kind: Sendable, Hashable {
            /// A replayed capture delivered its last packet: the normal end of `scan --device file:…`.
            case endOfCapture
            /// The controller's transport ended (unplugged, the peer closed the socket).
            case transportEnded
            /// A Hardware Error or an unanswered command: the controller must be brought up again.
            case controllerFault
        }
        public var kind: Kind
        public var description: String
        /// For `.endOfCapture`: what the file lacked (a record cut short, bytes that were no packet), if anything.
        public var damage: String?

        public init(_ kind: Kind, _ description: String, damage: String? = nil) {
            self.kind = kind
            self.description = description
            self.damage = damage
        }
    }

    /// What a replayed capture lacked, said for a person: nil when it was whole.
    static func damage(of transport: any HCITransport, path: String) -> String? {
        guard let s = (transport as? any TransportStatisticsProviding)?.statistics else { return nil }
        var parts: [String] = []
        if s.droppedRecords > 0 {
            parts.append("it ends in the middle of a record (\(s.droppedRecords) cut short, not replayed)")
        }
        if s.garbageBytes > 0 { parts.append("\(s.garbageBytes) bytes were no HCI packet and were skipped") }
        guard !parts.isEmpty else { return nil }
        return "capture \(path): " + parts.joined(separator: "; ")
            + "; every packet before the damage was replayed"
    }

    static func state(for e: TransportError) -> AdapterReport.State {
        switch e.kind {
        case .noSuchAdapter: .absent
        case .permissionDenied: .unauthorized
        case .unsupported: .unsupported
        case .adapterDown, .closed: .poweredOff
        default: .unknown
        }
    }
}

extension GatewayConfiguration.Scan {
    /// As the controller takes them; microseconds, so 2.5 ms stays 2.5 ms (the controller's unit is 0.625 ms).
    var parameters: ScanParameters {
        ScanParameters(
            active: active, interval: .microseconds(Int64((intervalMS * 1000).rounded())),
            window: .microseconds(Int64((windowMS * 1000).rounded())))
    }
}

extension DeviceSpec {
    /// A recorded capture: replayed, never commanded.
    var isCapture: Bool {
        if case .file = self { return true }
        return false
    }
}
