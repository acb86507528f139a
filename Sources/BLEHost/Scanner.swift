import BLEHCI
import BLETransport
import Foundation
import Logging

/// The scanning service: configures the controller to scan (extended commands when it supports LE Extended
/// Advertising, legacy otherwise), and delivers every advertisement to `reports` until cancelled.
///
/// In observer mode (a shared-mode transport whose `send` is unsupported: another host drives the
/// controller) it sends nothing and only reads the reports that flow past.
public final class Scanner: @unchecked Sendable {
    public enum Mode: Sendable {
        /// Own the controller's scanning; `info` says whether extended scanning is available.
        case control(ControllerInfo)
        /// Send no commands; only read events.
        case observer
    }

    public struct Statistics: Sendable, Hashable {
        public var assembler = ScanReportAssembler.Counters()
        /// Reports dropped because the consumer fell behind (live sources only: a source that can wait is waited for).
        public var droppedReports = 0
        /// Times scanning was (re)enabled.
        public var enables = 0
    }

    public let controller: HCIController
    public let mode: Mode
    public let parameters: ScanParameters
    /// The reports, in order. Bounded like the stage before it: when the transport can wait, the scanner waits for
    /// the consumer; when it cannot, reports beyond the bound are dropped and counted (`droppedReports`).
    public let reports: StageQueue<ScanReport>
    /// The controller's events, subscribed at init: a scanner created before the controller reads misses nothing.
    private let events: StageQueue<HCIControllerEvent>
    private let clock: any BLEClock
    private let logger: Logger
    private let lock = NSLock()
    private var assembler = ScanReportAssembler()
    private var enables = 0
    private let enabledContinuation: AsyncStream<Void>.Continuation

    /// Yields once scanning is enabled (each time the enable commands were answered), and finishes when `run` ends:
    /// a supervisor awaits this instead of watching a counter.
    public let enabled: AsyncStream<Void>

    /// - Parameter bufferSize: reports that may wait for the consumer.
    public init(
        controller: HCIController, mode: Mode, parameters: ScanParameters = ScanParameters(),
        bufferSize: Int = StageQueue<ScanReport>.defaultCapacity,
        logger: Logger = Logger(label: "ble.host.scanner")
    ) {
        self.controller = controller
        self.mode = mode
        self.parameters = parameters
        self.clock = controller.clock
        self.logger = logger
        reports = StageQueue(capacity: bufferSize, whenFull: controller.transport.incoming.whenFull)
        events = controller.events(includingReports: true)
        (enabled, enabledContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    public var statistics: Statistics {
        lock.withLock { Statistics(assembler: assembler.counters, droppedReports: reports.dropped, enables: enables) }
    }

    /// Whether scanning uses the extended commands.
    public var usesExtendedScanning: Bool {
        if case .control(let info) = mode { return info.supportsExtendedAdvertising }
        return false
    }

    /// Starts scanning and delivers reports until the task is cancelled or the transport ends; then stops
    /// scanning (best effort) and finishes `reports`. Throws the `HCIError` of a failed enable.
    public func run() async throws {
        defer {
            reports.finish()
            enabledContinuation.finish()
            events.cancel()  // the controller stops delivering (and, for a source that waits, waiting) for us
        }
        if case .control(let info) = mode {
            try await enable(info)
        }
        // Reports of one event, reused: the consumer is awaited outside the lock.
        var batch: [ScanReport] = []
        while let event = try? await events.next() {
            if case .transportEnded = event { break }
            let now = clock.now()
            let unix = clock.unixTime()
            lock.withLock {
                assembler.handle(event, now: now, unixTime: unix) { batch.append($0) }
            }
            for r in batch { await reports.send(r) }
            batch.removeAll(keepingCapacity: true)
            if Task.isCancelled { break }
        }
        events.cancel()
        if case .control = mode {
            // Cancelled or ended: tell the controller to stop. Our task may be cancelled, and its children
            // would be too, so the stop runs in a task of its own, which is awaited (bounded by the command timeout).
            let command = parameters.disableCommand(extended: usesExtendedScanning)
            await Task { [controller, logger] in
                do { try await Self.execute(command, on: controller) } catch {
                    logger.debug("scanner: disabling scan: \(error)")
                }
            }.value
        }
    }

    func enable(_ info: ControllerInfo) async throws {
        let commands = parameters.enableCommands(
            extended: info.supportsExtendedAdvertising, codedSupported: info.leFeatures.contains(.codedPHY))
        for command in commands {
            do {
                try await Self.execute(command, on: controller)
            } catch let e as HCIError {
                logger.error("scanner: \(e)")
                throw e
            }
        }
        lock.withLock { enables += 1 }
        enabledContinuation.yield()
        logger.info(
            """
            scanner: scanning (\(info.supportsExtendedAdvertising ? "extended" : "legacy"), \
            \(parameters.active ? "active" : "passive"))
            """
        )
    }

    static func execute(_ command: some HCICommand, on controller: HCIController) async throws {
        _ = try await controller.execute(command)
    }
}
