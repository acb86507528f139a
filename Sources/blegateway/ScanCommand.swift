import ArgumentParser
import BLEConfiguration
import BLEDomain
import BLEGateway
import BLETransport
import Foundation
import Logging

/// `blegateway scan`: what is advertising, as a live table on a terminal or one JSON object per sighting.
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan and show what is advertising: a live table, or JSON lines (docs/SCAN_JSON.md).")

    @Option(help: "hci0 (kernel socket), unix:PATH, tcp:HOST:PORT, serial:/dev/ttyX[@BAUD][,rtscts] or file:CAPTURE.")
    var device: String = "hci0"

    @Option(help: "For hciN: exclusive (owns the controller) or shared (beside bluetoothd).")
    var mode: AdapterMode = .exclusive

    @Flag(help: "One JSON object per sighting per line (the default when the output is not a terminal).")
    var json = false

    @Option(
        name: .customLong("filter"),
        help:
            "uuid:FEAA, name:PREFIX, addr:AA:BB:CC:DD:EE:FF, company:0x004C, rssi:-80. Repeatable: OR within a kind, AND across kinds."
    )
    var filters: [String] = []

    @OptionGroup var capture: CaptureArguments

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Active scanning: ask for scan responses (names).")
    var active = false

    @Flag(help: "Exclusive mode: if the kernel holds the adapter up, bring it down first (takes it from bluetoothd).")
    var forceDown = false

    @Flag(help: "Replay a file: capture in recorded time instead of as fast as possible.")
    var realtime = false

    @Option(help: "For hciN: the adapter's public address (AA:BB:CC:DD:EE:FF); opens whichever adapter has it now.")
    var address: String?

    @Flag(help: "Exclusive mode: the recovery may clear an rfkill soft block on the adapter's radio.")
    var allowRfkillUnblock = false

    @Flag(help: "Exclusive mode: the recovery may reset the adapter's USB device (USBDEVFS_RESET).")
    var allowUsbReset = false

    func run() async throws {
        let adapterMode = mode
        let filter: ScanFilter
        do { filter = try ScanFilter(parsing: filters) } catch { throw ValidationError("\(error)") }
        let spec: DeviceSpec
        do { spec = try DeviceSpec(parsing: device) } catch { throw ValidationError("\(error)") }
        var adapterAddress: String?
        if let address {
            guard case .kernel = spec else { throw ValidationError("--address applies to kernel adapters (hciN)") }
            do { adapterAddress = try KernelAdapters.normalizedAddress(address) } catch {
                throw ValidationError("\(error)")
            }
        }

        CommandLogging.bootstrap(level: .warning)
        let logger = Logger(label: "blegateway.scan")
        var options = TransportOptions()
        capture.apply(to: &options)
        options.bringDownIfUp = forceDown
        options.replayPacing = realtime ? .recorded : .asFastAsPossible
        options.adapterAddress = adapterAddress
        var lifecycle = AdapterLifecycle.Configuration()
        lifecycle.allowRfkillUnblock = allowRfkillUnblock
        lifecycle.allowUSBReset = allowUsbReset
        var scan = GatewayConfiguration.Scan()
        scan.active = active
        let clock = SystemClock()
        let source = HCISightingSource(
            spec: spec, mode: adapterMode, options: options, scan: scan, clock: clock,
            logger: logger, lifecycle: lifecycle)
        let asJSON = json || isatty(STDOUT_FILENO) != 1
        let table = LockedTable()
        // A reader on a pipe (`| jq`) sees each line as it is made; a file gets 64 KiB writes.
        let output = LineWriter(lineAtATime: StandardOutput.isPipeOrTerminal)
        // Adapter states, in order, for the watcher below: it decides whether a failure is the user's to fix.
        let (adapterReports, adapterSink) = AsyncStream.makeStream(of: AdapterReport.self)
        let captureDamage = Locked<String?>(nil)

        let run: @Sendable () async throws -> Void = {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { adapterSink.finish() }
                    do {
                        try await source.run(
                            adapter: { adapterSink.yield($0) },
                            sighting: { s in
                                guard filter.matches(s) else { return }
                                if asJSON { output.writeLine { s.appendJSON(to: &$0) } } else { table.add(s) }
                            })
                    } catch let stop as HCISightingSource.SourceStopped where stop.kind == .endOfCapture {
                        captureDamage.withLock { $0 = stop.damage }
                    }
                }
                // Until the adapter has run once, a failure is the user's to fix (no such adapter, no permission,
                // busy): say so and exit. Once it has run, the lifecycle's recovery takes over (unplug, reset, …).
                group.addTask {
                    var start = StartFailure()
                    for await report in adapterReports {
                        if report.state == .poweredOn { start.running() } else { start.set(report) }
                        if let failed = start.beforeFirstRun {
                            throw ScanFailure(report: failed, error: ScanFailure.AdapterUnusable(), spec: spec)
                        }
                    }
                }
                if let duration {
                    group.addTask {
                        try await Task.sleep(for: .seconds(duration))
                        throw CancellationError()
                    }
                }
                if !asJSON {
                    group.addTask {
                        // A screen is redrawn on a period; nothing waits on this.
                        while true {
                            try await Task.sleep(for: .milliseconds(500))
                            // Rows that fit: the title, a blank line, the header, "… N more" and the cursor's line.
                            let rows = max(1, StandardOutput.terminalSize().rows - 5)
                            let screen = "\u{1B}[H\u{1B}[2J" + table.render(device: device, limit: rows)
                            output.write(Array(screen.utf8))
                        }
                    }
                }
                defer { group.cancelAll() }
                do {
                    // The source's end (a capture replayed whole) or the first failure ends the scan.
                    try await group.next()
                } catch is CancellationError {}
            }
        }
        do {
            try await cancellingOnSignals(run)
        } catch let e as ScanFailure {
            output.flush()
            FileHandle.standardError.write(Data("error: \(e.message)\n".utf8))
            throw ExitCode(e.exitCode)
        } catch {
            output.flush()
            let e = ScanFailure(report: nil, error: error, spec: spec)
            FileHandle.standardError.write(Data("error: \(e.message)\n".utf8))
            throw ExitCode(e.exitCode)
        }
        output.flush()
        if !asJSON { print(table.render(device: device)) }
        let counters = source.counters
        var summary = "scan: \(counters.reports) reports, \(counters.dropped.total) dropped"
        if counters.dropped.total > 0 {
            summary +=
                " (the host fell behind the radio: \(counters.dropped.transport) at the transport, "
                + "\(counters.dropped.controller) at the controller, \(counters.dropped.scanner) at the scanner)"
        }
        if let damage = captureDamage.withLock({ $0 }) { summary += "\nwarning: \(damage)" }
        FileHandle.standardError.write(Data((summary + "\n").utf8))
    }
}

/// Why scanning could not go on, said for a person at a terminal.
struct ScanFailure: Error {
    struct AdapterUnusable: Error {}
    let report: AdapterReport?
    let error: any Error
    let spec: DeviceSpec

    var message: String {
        var m = report?.reason ?? "\(error)"
        // The lifecycle's retry note means nothing to a command that is about to exit.
        if let r = m.range(of: "; next try in") { m = String(m[..<r.lowerBound]) }
        switch report?.state {
        case .unauthorized?:
            m +=
                "\n  The gateway needs CAP_NET_RAW and CAP_NET_ADMIN: run as root, or grant them with "
                + "`sudo setcap cap_net_raw,cap_net_admin+eip $(command -v blegateway)`."
        case .absent?:
            switch spec {
            case .kernel: m += "\n  No such adapter: `ls /sys/class/bluetooth` lists the adapters this kernel knows."
            case .unix, .tcp: m += "\n  Is the simulator (`blegateway sim`) or the H4 bridge running?"
            case .serial: m += "\n  Is the controller plugged in, and is this its serial device?"
            case .file: break
            }
        default:
            break
        }
        return m
    }

    var exitCode: Int32 {
        switch report?.state {
        case .absent?: 3
        case .unauthorized?: 4
        case .unsupported?: 5
        default: 1
        }
    }
}

/// What the adapter said before the scan could start; shared between the source's callback and the watcher.
struct StartFailure: Sendable {
    var report: AdapterReport?
    var hasRun = false

    mutating func set(_ r: AdapterReport) { report = r }
    mutating func running() {
        hasRun = true
        report = nil
    }
    /// The adapter's failure while it has never been powered on. `resetting` is recovery, not a failure; `blocked`
    /// waits for rfkill (someone may unblock the radio while the scan waits, or the recovery may).
    var beforeFirstRun: AdapterReport? {
        hasRun || report?.state == .resetting || report?.state == .blocked ? nil : report
    }
}

/// Stdout for JSON lines: one write per 64 KiB into a file, or a line at a time for a reader on a pipe; flushed at
/// the end, on every way out (`cancellingOnSignals`).
final class LineWriter: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    private let lineAtATime: Bool

    init(lineAtATime: Bool) {
        self.lineAtATime = lineAtATime
        buffer.reserveCapacity(65536 + 4096)
    }

    /// One line, written in place by `body` (no array of its own), and its newline.
    func writeLine(_ body: (inout [UInt8]) -> Void) {
        lock.withLock {
            body(&buffer)
            buffer.append(UInt8(ascii: "\n"))
            if lineAtATime || buffer.count >= 65536 { flushLocked() }
        }
    }

    func write(_ bytes: [UInt8]) {
        lock.withLock {
            buffer.append(contentsOf: bytes)
            if lineAtATime || buffer.count >= 65536 || bytes.first == 0x1B { flushLocked() }
        }
    }

    func flush() { lock.withLock { flushLocked() } }

    private func flushLocked() {
        guard !buffer.isEmpty else { return }
        StandardOutput.write(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

/// The live table: one row per address, strongest first.
final class LockedTable: @unchecked Sendable {
    struct Row {
        var name = ""
        var kind = ""
        var rssi: Int8?
        var lastSeen = 0.0
        var count = 0
    }

    private let lock = NSLock()
    private var rows: [String: Row] = [:]

    func add(_ s: Sighting) {
        let name = s.advertisement.name
        let kind = s.beacon?.kind ?? "other"
        lock.withLock {
            var r = rows[s.address.description] ?? Row()
            if let name { r.name = name }
            r.kind = kind
            r.rssi = s.rssi
            r.lastSeen = s.timestamp
            r.count += 1
            rows[s.address.description] = r
        }
    }

    func render(device: String, limit: Int = 40) -> String {
        let now = Date().timeIntervalSince1970
        return lock.withLock {
            var out = "blegateway scan \(device) — \(rows.count) devices\n\n"
            // 80 columns: 19 + 20 + 16 + 7 + 13 + a count of up to 5 digits.
            out += "ADDRESS            NAME                KIND            RSSI   LAST SEEN    COUNT\n"
            for (address, r) in rows.sorted(by: { ($0.value.rssi ?? -128) > ($1.value.rssi ?? -128) }).prefix(limit) {
                // A name is the advertiser's: no control or format character of its reaches the terminal.
                let printable = PrintableText.line(r.name, replacement: "?")
                out += address.padding(toLength: 19, withPad: " ", startingAt: 0)
                out += String(printable.prefix(18)).padding(toLength: 20, withPad: " ", startingAt: 0)
                out += r.kind.padding(toLength: 16, withPad: " ", startingAt: 0)
                out += (r.rssi.map { "\($0)" } ?? "n/a").padding(toLength: 7, withPad: " ", startingAt: 0)
                // "%6.1fs ago" is 11 characters: two more keep COUNT clear of it.
                out += String(format: "%6.1fs ago", max(0, now - r.lastSeen)).padding(
                    toLength: 13, withPad: " ", startingAt: 0)
                out += "\(r.count)\n"
            }
            if rows.count > limit { out += "… \(rows.count - limit) more\n" }
            return out
        }
    }
}
