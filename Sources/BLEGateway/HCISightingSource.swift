import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Sightings from an HCI controller: open the transport, bring the controller up (exclusive mode) or
/// follow the kernel's scan (shared mode), scan, decode. Every way this can fail ends in an adapter
/// state with a reason; the runtime retries with backoff.
public final class HCISightingSource: SightingSource, @unchecked Sendable {
    let spec: DeviceSpec
    let mode: AdapterMode
    let capture: String?
    let scan: GatewayConfiguration.Scan
    let clock: any BLEClock
    let logger: Logger
    private let countersBox = NSLockedBox(SightingSourceCounters())
    private let current = NSLockedBox<Scanner?>(nil)

    public init(spec: DeviceSpec, mode: AdapterMode, capture: String?, scan: GatewayConfiguration.Scan,
                clock: any BLEClock, logger: Logger) {
        self.spec = spec
        self.mode = mode
        self.capture = capture
        self.scan = scan
        self.clock = clock
        self.logger = logger
    }

    public var counters: SightingSourceCounters {
        var c = countersBox.withLock { $0 }
        if let s = current.withLock({ $0 })?.statistics {
            c.reports += s.reports
            c.malformedEvents += s.malformedEvents
        }
        return c
    }

    public func run(adapter: @escaping @Sendable (AdapterReport) -> Void,
                    sighting: @escaping @Sendable (Sighting) -> Void) async throws {
        let device = spec.description
        let modeName = mode.rawValue
        func report(_ state: AdapterReport.State, _ reason: String) {
            adapter(AdapterReport(state: state, device: device, mode: modeName, reason: reason))
        }
        var options = TransportOptions()
        options.capturePath = capture
        let transport: any HCITransport
        do {
            transport = try openTransport(spec, mode: mode, clock: clock, options: options)
        } catch let e as TransportError {
            report(Self.state(for: e), e.message)
            throw e
        }
        let controller = HCIController(transport: transport, clock: clock)
        var parameters = Scanner.Parameters()
        parameters.active = scan.active
        parameters.interval = .milliseconds(Int64(scan.intervalMS))
        parameters.window = .milliseconds(Int64(scan.windowMS))
        let scanner = Scanner(controller: controller, parameters: parameters, logger: logger)
        current.withLock { $0 = scanner }
        defer {
            let s = scanner.statistics
            countersBox.withLock {
                $0.reports += s.reports
                $0.malformedEvents += s.malformedEvents
            }
            current.withLock { $0 = nil }
            transport.close()
        }
        let clock = self.clock
        let deliver: @Sendable (LEAdvertisingReport) -> Void = { r in
            sighting(Sighting(report: r, timestamp: clock.unixTime()))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await controller.run() }
            group.addTask { [logger] in
                do {
                    if self.mode == .shared {
                        adapter(AdapterReport(state: .poweredOn, device: device, mode: modeName, scanning: "observer"))
                        try await scanner.observe(deliver: deliver)
                    } else {
                        let info = try await ControllerBringUp.run(controller, logger: logger)
                        let extended = info.supportsExtendedScanning
                        adapter(AdapterReport(
                            state: .poweredOn, device: device, mode: modeName, address: info.address.description,
                            hciVersion: Int(info.version.hciVersion), manufacturer: Int(info.version.companyIdentifier),
                            scanning: extended ? "extended" : "legacy"))
                        try await scanner.run(extended: extended, deliver: deliver)
                    }
                } catch is CancellationError {
                    throw CancellationError()
                } catch let e as BringUpError {
                    report(.unsupported, e.description)
                    throw e
                } catch let e as Scanner.Stopped {
                    report(e.description.hasPrefix("Hardware Error") ? .resetting : .poweredOff, e.description)
                    throw e
                } catch let e as HCIError {
                    report(e.code == .transportClosed ? .poweredOff : .unknown, e.description)
                    throw e
                } catch let e as TransportError {
                    report(Self.state(for: e), e.message)
                    throw e
                }
            }
            // Whichever ends first ends the other: a dead transport ends the scan, a failed scan closes the transport.
            defer { group.cancelAll() }
            try await group.next()
            try await group.next()
        }
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
