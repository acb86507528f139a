// The ranging/region scoring harness, shared by `blegateway-bench ranging` and BLEDomainTests
// (Tests/BLEDomainTests/RangingScoringSupport.swift is a symlink to this file): the simulator runs
// in-process on a ManualClock, one host reads its H4 bytes over the controller socket, parses them
// with BLEHCI and BLEDomain as the gateway does, and the results are scored against the simulator's
// ground-truth file.
import BLEDomain
import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the scoring scenario contains, and how long to run it.
struct RangingScoreSetup {
    var seconds = 600.0
    var seed: UInt64 = 1
    /// Virtual time per step; readings are stamped with the step's end (≤ 100 ms late).
    var step: Duration = .milliseconds(100)
    var ranging = RangingConfiguration()
    /// Static beacons, two per distance (metres), at 100 ms, σ = 4 dB.
    var staticDistances: [Double] = [0.5, 1, 1.5, 2, 3, 4, 5, 7, 10]
    var walkingSpeed = 1.4
    /// The presence region's exit timeout.
    var exitTimeout: Duration = .seconds(10)
    /// Scored only after the filters have had this long.
    var warmUp = 10.0
}

/// Median errors in one band of true distance.
struct RangingBandScore {
    var band: ClosedRange<Double>
    var count: Int
    var medianAbsoluteError: Double
    var medianRelativeError: Double
}

struct RangingScore {
    var staticBands: [RangingBandScore]
    var walkingBands: [RangingBandScore]
    /// Seconds from coming into range to `entered`, and from leaving it to `exited`.
    var enterLatencies: [Double]
    var exitLatencies: [Double]
    /// Enter/exit events of the region whose edge a tag stands on, and the hours watched.
    var boundaryFlaps: Int
    var boundaryHours: Double
    var readings: Int
    var updates: Int

    var flapsPerHour: Double { Double(boundaryFlaps) / boundaryHours }

    func table() -> String {
        func f(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }
        var s = "| tag | true distance (m) | updates | median abs error (m) | median error (% of distance) |\n"
        s += "|---|---|---|---|---|\n"
        for (name, bands) in [("static", staticBands), ("walking \(f(1.4, 1)) m/s", walkingBands)] {
            for b in bands where b.count > 0 {
                s +=
                    "| \(name) | \(f(b.band.lowerBound, 1))–\(f(b.band.upperBound, 1)) | \(b.count) | "
                    + "\(f(b.medianAbsoluteError)) | \(f(b.medianRelativeError * 100, 1)) |\n"
            }
        }
        func lat(_ v: [Double]) -> String {
            v.isEmpty ? "none" : "median \(f(median(v))) s, max \(f(v.max()!)) s over \(v.count)"
        }
        s += "\nregion enter latency: \(lat(enterLatencies))\nregion exit latency: \(lat(exitLatencies))\n"
        s += "boundary flaps: \(boundaryFlaps) in \(f(boundaryHours, 3)) h (\(f(flapsPerHour, 1))/h)\n"
        s += "readings: \(readings), ranging updates: \(updates)\n"
        return s
    }
}

func median(_ v: [Double]) -> Double {
    guard !v.isEmpty else { return .nan }
    let s = v.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

struct RangingScoreError: Error, CustomStringConvertible {
    var description: String
}

enum RangingScoreScenario {
    static let uuid: [UInt8] = [
        0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
    ]
    static let gateway = Vec3(0, 0, 1)
    /// Mean RSSI −77 dBm (P₁ₘ −59, n = 2): midway between the boundary region's −75/−79 thresholds.
    static let boundaryDistance = pow(10, 18.0 / 20)
    /// Where the presence tag jumps to and from: far beyond any reception (−129 dBm mean).
    static let far = 3000.0
    static let near = 2.0

    static func emitter(_ name: String, major: UInt16, minor: UInt16, address: UInt64, motion: Motion) -> EmitterSpec {
        EmitterSpec(
            name: name, role: .beacon, frame: .iBeacon(uuid: uuid, major: major, minor: minor, measuredPower: -59),
            address: BDAddress(rawValue: 0xC000_0000_0000 | address), addressType: 1, motion: motion, interval: 0.1,
            rssiAt1m: -59, scanResponse: nil)
    }

    static func build(_ setup: RangingScoreSetup) -> Scenario {
        var s = Scenario(name: "ranging-score")
        s.radio.pathLossExponent = 2.0
        s.radio.shadowingSigmaDB = 4.0
        s.radio.lossProbability = 0.05
        s.radio.sensitivityDBm = -100
        s.truthInterval = 0.1
        s.gateways = [GatewaySpec(id: "gw", position: gateway, address: BDAddress(rawValue: 0x001B_DCF0_0001))]
        var n: UInt64 = 1
        for (i, d) in setup.staticDistances.enumerated() {
            for j in 0..<2 {
                let a = Double(i) * 0.7 + Double(j) * 3.1
                let p = Vec3(gateway.x + d * cos(a), gateway.y + d * sin(a), gateway.z)
                s.emitters.append(
                    emitter("static-\(i)-\(j)", major: 1, minor: UInt16(i * 2 + j), address: n, motion: .fixed(p)))
                n += 1
            }
        }
        // A loop through the room: past the gateway at 0.8 m, out to 9.4 m, a long leg back; every
        // turn is a corner of the loop (a U-turn at the gateway itself is scored in docs only).
        let walk = [Vec3(-6, 0.8, 1), Vec3(6, 0.8, 1), Vec3(8, 5, 1), Vec3(-3, 6, 1)]
        s.emitters.append(
            emitter(
                "walker", major: 2, minor: 1, address: 100,
                motion: .path(walk, speed: setup.walkingSpeed, pause: 0, loop: true)))
        let hop = [Vec3(near, 0, 1), Vec3(far, 0, 1)]
        s.emitters.append(
            emitter(
                "visitor", major: 3, minor: 1, address: 101, motion: .path(hop, speed: 20_000, pause: 30, loop: true)))
        s.emitters.append(
            emitter("boundary", major: 4, minor: 1, address: 102, motion: .fixed(Vec3(-boundaryDistance, 0, 1))))
        return s
    }

    static func id(major: UInt16, minor: UInt16) -> String {
        BeaconIdentity.iBeacon(
            uuid: BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0), major: major, minor: minor
        ).id
    }

    static func regions(_ setup: RangingScoreSetup) -> [Region] {
        let u = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
        return [
            Region(id: "presence", matcher: .iBeacon(uuid: u, major: 3, minor: 1), exitTimeout: setup.exitTimeout),
            Region(
                id: "boundary", matcher: .iBeacon(uuid: u, major: 4), enterRSSI: -75, exitRSSI: -79,
                exitDwell: .seconds(5)),
        ]
    }
}

/// Runs the scenario and scores it.
func scoreRanging(_ setup: RangingScoreSetup) async throws -> RangingScore {
    let scenario = RangingScoreScenario.build(setup)
    let dir = NSTemporaryDirectory() + "ranging-score-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var options = SimulatorOptions(socketDirectory: dir)
    options.seed = setup.seed
    options.duration = setup.seconds
    options.truthPath = dir + "/truth.jsonl"
    let clock = ManualClock()
    let sim = try Simulator(scenario: scenario, options: options, clock: clock, pacing: .clock(batch: .zero))
    let ended = EndFlag()
    let run = Task {
        defer { ended.set() }
        try await sim.run()
    }
    defer { run.cancel() }

    let host = try HCISocketHost(path: sim.socketPath(for: "gw"))
    try host.startPassiveScan()

    var ranging = RangingEngine(configuration: setup.ranging)
    var regions = RegionMonitor(regions: RangingScoreScenario.regions(setup), at: clock.now())
    var resolver = PrivateAddressResolver(keys: [])
    var ids: [BeaconIdentity: String] = [:]
    var estimates: [String: [(t: Double, d: Double)]] = [:]
    var events: [RegionEvent] = []
    var readings = 0
    var reports = 0
    var updates = 0

    while clock.now().seconds < setup.seconds && !ended.isSet {
        // The radio is idle when asleep on the clock (or finished, at the end of its duration).
        while clock.sleeperCount == 0 && !ended.isSet { try await Task.sleep(nanoseconds: 20_000) }
        clock.advance(by: setup.step)
        while clock.sleeperCount == 0 && !ended.isSet { try await Task.sleep(nanoseconds: 20_000) }
        let now = clock.now()
        let unix = clock.unixTime()
        // The controller's writer thread sends what the radio queued: read until every report it
        // counted has arrived, so each reading carries the step it was received in.
        let sent = sim.nodes[0].stats.reportsSent
        let done = { reports >= sent || ended.isSet }
        try host.drain(until: done) { packet in
            let e = packet.payload
            guard packet.type == .event, e.count > 3, e[0] == 0x3E else { return }
            let body: (LEAdvertisingReport) -> Void = { report in
                let sighting = Sighting(report: report, timestamp: unix)
                let identity = resolver.identity(of: sighting)
                let rssi = ranging.observe(sighting, as: identity, at: now)
                events += regions.observe(identity, rssi: rssi, at: now)
                readings += 1
            }
            if e[2] == 0x02 { reports += LEAdvertisingReport.parseLegacy(e[3...], body) ?? 0 }
            if e[2] == 0x0D { reports += LEAdvertisingReport.parseExtended(e[3...], body) ?? 0 }
        }
        events += regions.tick(at: now)
        for u in ranging.tick(at: now) {
            updates += 1
            guard let d = u.distance else { continue }
            let id = ids[u.identity] ?? u.identity.id
            ids[u.identity] = id
            estimates[id, default: []].append((u.time.seconds, d))
        }
    }
    // Let the radio reach its end and close the truth file.
    while !ended.isSet {
        clock.advance(by: setup.step)
        try await Task.sleep(nanoseconds: 100_000)
    }
    try await run.value
    let truth = try GroundTruthDistances(path: options.truthPath!)
    return try score(setup, truth: truth, estimates: estimates, events: events, readings: readings, updates: updates)
}

/// Set when the simulator's `run()` returns.
final class EndFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

private func score(
    _ setup: RangingScoreSetup, truth: GroundTruthDistances, estimates: [String: [(t: Double, d: Double)]],
    events: [RegionEvent], readings: Int, updates: Int
) throws -> RangingScore {
    let bands: [ClosedRange<Double>] = [0.4...0.99, 1...1.99, 2...2.99, 3...5, 5.01...10]
    func scoreBands(_ ids: [String]) -> [RangingBandScore] {
        var abs = Array(repeating: [Double](), count: bands.count)
        var rel = abs
        for id in ids {
            for (t, d) in estimates[id] ?? [] where t >= setup.warmUp {
                guard let truthD = truth.distance(id, at: t), let b = bands.firstIndex(where: { $0.contains(truthD) })
                else {
                    continue
                }
                abs[b].append(Swift.abs(d - truthD))
                rel[b].append(Swift.abs(d - truthD) / truthD)
            }
        }
        return bands.indices.map {
            RangingBandScore(
                band: bands[$0], count: abs[$0].count, medianAbsoluteError: median(abs[$0]),
                medianRelativeError: median(rel[$0]))
        }
    }
    var staticIDs: [String] = []
    for i in setup.staticDistances.indices {
        for j in 0..<2 { staticIDs.append(RangingScoreScenario.id(major: 1, minor: UInt16(i * 2 + j))) }
    }

    // Presence: in range while the visitor stands near (its truth distance below 100 m).
    let visitor = RangingScoreScenario.id(major: 3, minor: 1)
    let series = truth.series(visitor)
    var arrivals: [Double] = []
    var departures: [Double] = []
    for (a, b) in zip(series, series.dropFirst()) where a.t >= setup.warmUp {
        if a.d > 100 && b.d <= 100 { arrivals.append(b.t) }
        if a.d <= 100 && b.d > 100 { departures.append(b.t) }
    }
    let presence = events.filter { $0.region == "presence" }
    var enter: [Double] = []
    var exit: [Double] = []
    for a in arrivals {
        if let e = presence.first(where: { $0.kind == .entered && $0.time.seconds >= a - 1 }) {
            enter.append(e.time.seconds - a)
        }
    }
    for d in departures {
        if let e = presence.first(where: { $0.kind == .exited && $0.time.seconds >= d - 1 }) {
            exit.append(e.time.seconds - d)
        }
    }
    let flaps = events.filter { $0.region == "boundary" && ($0.kind == .entered || $0.kind == .exited) }.count

    return RangingScore(
        staticBands: scoreBands(staticIDs), walkingBands: scoreBands([RangingScoreScenario.id(major: 2, minor: 1)]),
        enterLatencies: enter, exitLatencies: exit, boundaryFlaps: flaps, boundaryHours: setup.seconds / 3600,
        readings: readings, updates: updates)
}

/// The `distance` lines of a ground-truth file (docs/SIMULATOR.md), by beacon id and tenth of a second.
struct GroundTruthDistances {
    var byBeacon: [String: [Int: Double]] = [:]

    init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw RangingScoreError(description: "cannot read \(path)")
        }
        for line in text.split(separator: "\n") where line.contains("\"type\":\"distance\"") {
            guard let data = line.data(using: .utf8),
                let o = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let t = o["t"] as? Double, let b = o["beacon"] as? String, let d = o["distance_m"] as? Double
            else { throw RangingScoreError(description: "bad truth line: \(line)") }
            byBeacon[b, default: [:]][Int((t * 10).rounded())] = d
        }
    }

    func distance(_ id: String, at t: Double) -> Double? { byBeacon[id]?[Int((t * 10).rounded())] }

    func series(_ id: String) -> [(t: Double, d: Double)] {
        (byBeacon[id] ?? [:]).sorted { $0.key < $1.key }.map { (Double($0.key) / 10, $0.value) }
    }
}

extension HCISocketHost {
    /// Bring-up and a passive scan with the window always open (10 ms / 10 ms): Reset, Set Event Mask, LE Set
    /// Event Mask, LE Set Scan Parameters, LE Set Scan Enable; each must complete with success.
    func startPassiveScan() throws {
        for command: [UInt8] in [
            [0x01, 0x03, 0x0C, 0x00],
            [0x01, 0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x00, 0x20],
            [0x01, 0x01, 0x20, 0x08, 0x1F, 0x00, 0, 0, 0, 0, 0, 0],
            [0x01, 0x0B, 0x20, 0x07, 0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00],
            [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00],
        ] {
            let answer = try self.command(command)
            guard answer.count >= 7, answer[1] == 0x0E, answer[6] == 0 else {
                throw RangingScoreError(description: "command \(command) failed: \(answer)")
            }
        }
    }
}
