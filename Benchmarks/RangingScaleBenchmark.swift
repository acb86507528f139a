import BLEConfiguration
import BLEDomain
import BLEGateway
import BLEHCI
import BLEHost
import BLETestSupport
import BLETransport
import Foundation

/// Issue #6's scale target: 10,000 tracked beacons with the whole gateway's resident memory ≤ 60 MB.
///
/// A real `GatewayRuntime` (ranging, regions, private-address resolver, spool in SQLite, MQTT client) is fed by a
/// source that hands it what a controller would: each beacon's HCI LE Advertising Report event (Core v5.4, Vol 4,
/// Part E, §7.7.65.2) in bytes, parsed by `HCIEvent`, assembled by `ScanReportAssembler` and decoded into a
/// `Sighting`. No broker listens (the port is closed), so every reading the runtime makes stays in the spool:
/// ranging summaries each interval, region states; the MQTT client keeps retrying. The process's VmRSS and VmHWM
/// (/proc/self/status) are printed before the runtime exists, once the beacons are tracked, and at the end.
///
/// Arguments: `--beacons N` (default 10000), `--seconds S` of real time (default 30), `--rate R` sightings per
/// beacon per second (default 2), `--regions N` UUID+major regions (default 100).
func runRangingScaleBenchmark(args: [String]) async {
    let beacons = benchmarkOption(args, "--beacons", 10_000)
    let seconds = benchmarkOption(args, "--seconds", 30)
    let rate = benchmarkOption(args, "--rate", 2)
    let regionCount = benchmarkOption(args, "--regions", 100)
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("ranging-scale-\(getpid())")
    defer { try? FileManager.default.removeItem(at: work) }
    let before = ProcessMemory.read()

    let uuid = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
    var configuration = GatewayConfiguration()
    configuration.gateway.id = "scale"
    configuration.spool.path = work.appendingPathComponent("spool.sqlite").path
    // A port nothing listens on: the gateway measured here never reaches a broker.
    configuration.mqtt.broker = "mqtt://127.0.0.1:\((try? Loopback.freePort()) ?? 9)"
    configuration.remoteConfig.enabled = false
    configuration.publishing.healthIntervalSeconds = 5
    configuration.regions = (0..<regionCount).map {
        Region(id: "zone-\($0)", matcher: .iBeacon(uuid: uuid, major: UInt16($0)), enterRSSI: -75, exitRSSI: -80)
    }
    let source = AdvertisingReportSource(beacons: beacons, rate: rate, majors: max(regionCount, 1), uuid: uuid)
    let runtime: GatewayRuntime
    do {
        runtime = try GatewayRuntime(
            configuration: configuration, source: source, clock: SystemClock(),
            clockSynchronized: { true })
    } catch {
        print("ranging-scale: the gateway did not start: \(error)")
        return
    }
    let started = ContinuousClock.now
    let task = Task { try await runtime.run() }
    var tracked: ProcessMemory?
    var series: [String] = []
    var tick = 0
    while ContinuousClock.now - started < .seconds(seconds) {
        try? await Task.sleep(for: .seconds(1))
        tick += 1
        // Every beacon heard at least twice: all are tracked and their first summaries were spooled.
        if tracked == nil, source.rounds >= 2 { tracked = ProcessMemory.read() }
        if tick % 10 == 0 { series.append("\(tick) s \(ProcessMemory.read().rss / 1024)") }
    }
    let end = ProcessMemory.read()
    let sightings = source.sightings
    let spool = runtime.spoolStatistics
    task.cancel()
    _ = await task.result

    let elapsed = (ContinuousClock.now - started).seconds
    print(
        "ranging-scale: \(beacons) beacons × \(rate)/s, \(regionCount) regions, \(seconds) s: "
            + "\(sightings) sightings (\(Int(Double(sightings) / elapsed))/s) decoded from HCI events and ranged; "
            + "spool \(spool.depth) readings")
    print(
        "ranging-scale: VmRSS before the gateway \(before.rss / 1024) MiB; all beacons tracked "
            + "\((tracked ?? end).rss / 1024) MiB; end \(end.rss / 1024) MiB; VmHWM \(end.hwm / 1024) MiB "
            + "(target ≤ 60 MB)")
    print(
        "ranging-scale: VmRSS MiB every 10 s: \(series.joined(separator: ", ")); spool limit "
            + "\(Int(configuration.spool.maxMegabytes)) MB")
}

/// VmRSS and VmHWM of this process, KiB.
struct ProcessMemory {
    var rss = 0
    var hwm = 0

    static func read() -> ProcessMemory {
        var m = ProcessMemory()
        guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return m }
        for line in s.split(separator: "\n") {
            let value = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
            if line.hasPrefix("VmRSS:") { m.rss = value }
            if line.hasPrefix("VmHWM:") { m.hwm = value }
        }
        return m
    }
}

/// What a controller would deliver for `beacons` iBeacons (one UUID, major = index mod `majors`, minor = index),
/// each heard `rate` times a second at an RSSI that wanders about −70 dBm: HCI event bytes, parsed and decoded as the
/// scanner does.
final class AdvertisingReportSource: SightingSource, @unchecked Sendable {
    let beacons: Int
    let rate: Int
    let majors: Int
    let uuid: BluetoothUUID
    private let counts = Locked((rounds: 0, sightings: 0))

    init(beacons: Int, rate: Int, majors: Int, uuid: BluetoothUUID) {
        self.beacons = beacons
        self.rate = rate
        self.majors = majors
        self.uuid = uuid
    }

    var rounds: Int { counts.withLock { $0.rounds } }
    var sightings: Int { counts.withLock { $0.sightings } }
    var counters: SightingSourceCounters { SightingSourceCounters() }

    /// HCI_LE_Meta_Event / LE Advertising Report with one ADV_NONCONN_IND report carrying an iBeacon (Apple's
    /// manufacturer data 0x004C: 0x02 0x15, UUID, major, minor, measured power), as an H4 event payload.
    func event(beacon i: Int, rssi: Int8) -> [UInt8] {
        var data = ByteWriter()
        data.u8(2)
        data.u8(0x01)
        data.u8(0x06)  // Flags: LE General Discoverable, BR/EDR not supported
        data.u8(26)
        data.u8(0xFF)
        data.le16(0x004C)
        data.u8(0x02)
        data.u8(0x15)
        data.be64(uuid.high)
        data.be64(uuid.low)
        data.be16(UInt16(i % majors))
        data.be16(UInt16(truncatingIfNeeded: i))
        data.u8(0xC5)  // −59 dBm at 1 m
        var p = ByteWriter()
        p.u8(0x02)  // subevent: LE Advertising Report
        p.u8(1)  // Num_Reports
        p.u8(0x03)  // ADV_NONCONN_IND
        p.u8(0x01)  // random address
        let address = 0xC000_0000_0000 | UInt64(i)
        for b in 0..<6 { p.u8(UInt8(truncatingIfNeeded: address >> (8 * b))) }  // little-endian
        p.u8(UInt8(data.bytes.count))
        p.append(data.bytes)
        p.u8(UInt8(bitPattern: rssi))
        return [HCIEventCode.leMeta.rawValue, UInt8(p.bytes.count)] + p.bytes
    }

    func run(
        adapter: @escaping @Sendable (AdapterReport) -> Void,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async throws {
        adapter(AdapterReport(state: .poweredOn, device: "bench", mode: .exclusive, scanning: .legacy))
        var assembler = ScanReportAssembler()
        let clock = SystemClock()
        var round = 0
        let period = Duration.seconds(1) / rate
        var next = clock.now()
        while !Task.isCancelled {
            for i in 0..<beacons {
                // Deterministic wander of ±8 dB about −70 dBm, different per beacon and round.
                let rssi = Int8(-70 + Int((UInt64(i &* 7919 &+ round &* 104_729) >> 3) % 17) - 8)
                guard let e = HCIEvent.parse(event(beacon: i, rssi: rssi)[...]) else { fatalError("bad event") }
                assembler.handle(.event(e), now: clock.now(), unixTime: clock.unixTime()) {
                    sighting(Sighting(scanReport: $0))
                }
            }
            round += 1
            counts.withLock {
                $0.rounds = round
                $0.sightings += beacons
            }
            next += period
            if next > clock.now() { try await clock.sleep(until: next) } else { next = clock.now() }
        }
        throw CancellationError()
    }
}
