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
        /// Reports dropped because the consumer fell behind.
        public var droppedReports = 0
        /// Times scanning was (re)enabled.
        public var enables = 0
    }

    public let controller: HCIController
    public let mode: Mode
    public let parameters: ScanParameters
    public let reports: AsyncStream<ScanReport>
    private let continuation: AsyncStream<ScanReport>.Continuation
    private let clock: any BLEClock
    private let logger: Logger
    private let lock = NSLock()
    private var assembler = ScanReportAssembler()
    private var dropped = 0
    private var enables = 0
    private var listening = false

    /// True once `run()` has subscribed to the controller's events.
    public var isListening: Bool { lock.withLock { listening } }

    /// - Parameter bufferSize: reports that may wait for the consumer; older ones are dropped beyond it.
    public init(controller: HCIController, mode: Mode, parameters: ScanParameters = ScanParameters(),
                bufferSize: Int = 4096, logger: Logger = Logger(label: "ble.host.scanner")) {
        self.controller = controller
        self.mode = mode
        self.parameters = parameters
        self.clock = controller.clock
        self.logger = logger
        (reports, continuation) = AsyncStream.makeStream(
            of: ScanReport.self, bufferingPolicy: .bufferingNewest(bufferSize))
    }

    public var statistics: Statistics {
        lock.withLock { Statistics(assembler: assembler.counters, droppedReports: dropped, enables: enables) }
    }

    /// Whether scanning uses the extended commands.
    public var usesExtendedScanning: Bool {
        if case .control(let info) = mode { return info.supportsExtendedAdvertising }
        return false
    }

    /// Starts scanning and delivers reports until the task is cancelled or the transport ends; then stops
    /// scanning (best effort) and finishes `reports`. Throws the `HCIError` of a failed enable.
    public func run() async throws {
        defer { continuation.finish() }
        let events = controller.events()  // subscribe before enabling, so no report is missed
        lock.withLock { listening = true }
        if case .control(let info) = mode {
            try await enable(info)
        }
        for await event in events {
            if case .transportEnded = event { break }
            let now = clock.now()
            let unix = clock.unixTime()
            lock.withLock {
                assembler.handle(event, now: now, unixTime: unix) { report in
                    if case .dropped = continuation.yield(report) { dropped += 1 }
                }
            }
        }
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
