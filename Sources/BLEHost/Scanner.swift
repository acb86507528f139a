import BLEHCI
import BLETransport
import Foundation
import Logging

/// LE scanning: enables it on the controller (extended where supported, legacy otherwise) and hands
/// every advertising report to its consumer until cancelled or the controller is lost.
///
/// Duplicate filtering is always off: every advertisement is an RSSI sample, which ranging needs.
public final class Scanner: Sendable {
    public struct Parameters: Sendable, Hashable {
        /// Active scanning sends scan requests and reports scan responses (names).
        public var active = false
        /// LE scan interval and window (Core v5.4 Vol 4 Part E §7.8.10: 2.5 ms … 10.24 s, in 0.625 ms units).
        public var interval: Duration = .milliseconds(100)
        public var window: Duration = .milliseconds(100)
        public var ownAddressType: LEAddressType = .public
        public init() {}

        /// The interval or window in 0.625 ms units, clamped to the range the specification allows.
        static func units(_ d: Duration) -> UInt16 {
            UInt16(clamping: max(4, min(0x4000, Int((d.seconds / 0.000625).rounded()))))
        }
    }

    /// How a scan ended without cancellation: the adapter lifecycle decides what to do about it.
    public struct Stopped: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public struct Statistics: Sendable, Hashable {
        public var reports = 0
        public var malformedEvents = 0
        public var reassembly: ExtendedAdvertisingReassembler.Counters?
    }

    let controller: HCIController
    let parameters: Parameters
    let logger: Logger
    private let stats = LockedStatistics()

    public init(controller: HCIController, parameters: Parameters, logger: Logger) {
        self.controller = controller
        self.parameters = parameters
        self.logger = logger
    }

    public var statistics: Statistics { stats.value }

    /// Enables scanning and delivers reports until cancelled (then disables scanning, best effort) or until the
    /// controller fails: a Hardware Error, a command timeout or the transport's end throws `Stopped`.
    public func run(extended: Bool, deliver: @Sendable (LEAdvertisingReport) -> Void) async throws {
        let events = controller.events()  // subscribe before enabling, so the first reports are not missed
        let type: LEScanType = parameters.active ? .active : .passive
        let interval = Parameters.units(parameters.interval)
        let window = min(interval, Parameters.units(parameters.window))
        do {
            if extended {
                _ = try await controller.execute(LESetExtendedScanParametersCommand(
                    ownAddressType: parameters.ownAddressType, filterPolicy: 0,
                    phys: [.le1M(type, interval: interval, window: window)]))
                _ = try await controller.execute(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: 0))
            } else {
                _ = try await controller.execute(LESetScanParametersCommand(
                    scanType: type, interval: interval, window: window, ownAddressType: parameters.ownAddressType))
                _ = try await controller.execute(LESetScanEnableCommand(enable: true, filterDuplicates: false))
            }
        } catch let e as HCIError {
            logger.error("scan: \(e)")
            throw e
        }
        let kind = "\(extended ? "extended" : "legacy"), \(parameters.active ? "active" : "passive")"
        logger.info("scanning (\(kind), interval \(interval) window \(window) × 0.625 ms, duplicates reported)")
        defer {
            if Task.isCancelled { disable(extended: extended) }
        }
        try await consume(events, deliver: deliver)
    }

    /// Observer mode for shared transports, where the kernel scans: no commands, only the reports.
    public func observe(deliver: @Sendable (LEAdvertisingReport) -> Void) async throws {
        try await consume(controller.events(), deliver: deliver)
    }

    func consume(_ events: AsyncStream<HCIControllerEvent>, deliver: @Sendable (LEAdvertisingReport) -> Void) async throws {
        var reassembler = ExtendedAdvertisingReassembler()
        for await e in events {
            switch e {
            case .event(.leAdvertisingReport(let params)):
                let n = LEAdvertisingReport.parseLegacy(params) { deliver($0) }
                stats.update { s in
                    if let n { s.reports += n } else { s.malformedEvents += 1 }
                }
            case .event(.leExtendedAdvertisingReport(let params)):
                let now = controller.clock.now()
                var delivered = 0
                let n = LEAdvertisingReport.parseExtended(params) { fragment in
                    if let whole = reassembler.accept(fragment, now: now) {
                        deliver(whole.report)
                        delivered += 1
                    }
                }
                let counters = reassembler.counters
                stats.update { s in
                    s.reports += delivered
                    if n == nil { s.malformedEvents += 1 }
                    s.reassembly = counters
                }
            case .malformed:
                stats.update { $0.malformedEvents += 1 }
            case .event(.hardwareError(let code)):
                throw Stopped(description: "Hardware Error event (code 0x\(String(code, radix: 16)))")
            case .commandTimedOut(let opcode, let after):
                throw Stopped(description: "\(opcode) got no answer within \(after): the controller is stuck")
            case .transportEnded(let error):
                throw Stopped(description: error.map { "transport failed: \($0)" } ?? "transport ended")
            default:
                break
            }
        }
        try Task.checkCancellation()
        throw Stopped(description: "the controller's event stream ended")
    }

    /// Scan Enable off on the way out: in an unstructured task, since ours is cancelled, bounded by the
    /// controller's command timeout. Best effort: an unplugged controller cannot answer.
    func disable(extended: Bool) {
        let controller = self.controller
        Task {
            if extended {
                _ = try? await controller.execute(LESetExtendedScanEnableCommand(enable: false))
            } else {
                _ = try? await controller.execute(LESetScanEnableCommand(enable: false))
            }
        }
    }
}

/// Counters shared between the scanning task and readers of `statistics`.
final class LockedStatistics: @unchecked Sendable {
    private let lock = NSLock()
    private var stats = Scanner.Statistics()
    var value: Scanner.Statistics { lock.withLock { stats } }
    func update(_ body: (inout Scanner.Statistics) -> Void) { lock.withLock { body(&stats) } }
}
