// The presence scoring harness, shared by `blegateway-bench presence` and BLEFleetTests
// (Tests/BLEFleetTests/PresenceScoringSupport.swift is a symlink to this file): the office scenario runs in-process on
// a ManualClock; one host per gateway reads its H4 bytes and ranges with BLEDomain as the gateway does, once a
// second per beacon (the beacon topic's reading); the fleet's PresenceEngine and the baseline both get exactly those
// readings, and both are scored against the simulator's ground-truth positions.
import BLEDomain
import BLEFleet
import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation

struct PresenceScoreSetup {
    var scenarioPath = "config/scenarios/office.yaml"
    var seconds = 3600.0
    var seed: UInt64 = 1
    var step: Duration = .milliseconds(100)
    /// Scored only after the filters have had this long.
    var warmUp = 60.0
    /// Whether to follow each stage's lag behind the walkers and the raw fit's room (`--misses`; costs time).
    var lagTable = false
    /// Overrides of the site's presence settings, to try others on the same data.
    var tune: @Sendable (inout PresenceSettings) -> Void = { _ in }
}

/// One algorithm's figures.
struct PresenceAlgorithmScore {
    var name: String
    /// Seconds with the right room, over seconds scored, for static tags and for walkers.
    var staticRoomAccuracy: Double
    var walkerRoomAccuracy: Double
    var medianError: Double
    var p90Error: Double
    var staticMedianError: Double
    var walkerMedianError: Double
    /// Room changes of tags that never move, per tag and hour.
    var staticFlapsPerHour: Double
    var positions: Int
}

struct PresenceScore {
    var ours: PresenceAlgorithmScore
    var baseline: PresenceAlgorithmScore
    var staticTags: Int
    var walkers: Int
    var hours: Double
    var readings: Int
    /// Walkers' seconds where ours named the wrong room, by (true room, ours, the room of our smoothed position):
    /// where the position itself is right, the hysteresis held the tag back.
    var walkerMisses: [WalkerMiss: Int] = [:]
    /// How far behind the walkers each stage is: the median error against the truth 0, 1, … 6 s earlier. The shift
    /// with the least error is the stage's lag.
    var walkerLag = WalkerLag()
    /// The walkers' room taken straight from each second's fit (the gateways' newest distances, no smoothing, no
    /// hysteresis), over the seconds with three gateways.
    var rawFixWalkerRoomAccuracy = 0.0
    /// Every room change of a tag that never moves: when, from where to where, and where our position was.
    var staticFlaps: [String] = []

    struct WalkerLag {
        /// The gateways' distances (the beacon topic's), against the true distances.
        var distances: [Double] = []
        /// Each second's fit over those distances.
        var fixes: [Double] = []
        /// Our published position.
        var positions: [Double] = []
    }

    struct WalkerMiss: Hashable {
        var truth: String
        var ours: String
        var position: String
    }

    /// The walkers' misses, most seconds first, split into those the hysteresis caused and those of the position.
    func missTable() -> String {
        let total = walkerMisses.values.reduce(0, +)
        let held = walkerMisses.filter { $0.key.position == $0.key.truth }.values.reduce(0, +)
        var s = "walkers' misses: \(total) s; held back by the hysteresis (the position's room right): \(held) s\n"
        s += "| true room | ours | room of our position | seconds |\n|---|---|---|---|\n"
        for (k, v) in walkerMisses.sorted(by: { ($0.value, $1.key.truth) > ($1.value, $0.key.truth) }) {
            s += "| \(k.truth) | \(k.ours) | \(k.position) | \(v) |\n"
        }
        s += String(
            format: "the room of each second's raw fit (no smoothing, no hysteresis) is right %.1f %% for walkers\n",
            rawFixWalkerRoomAccuracy * 100)
        func row(_ name: String, _ v: [Double]) -> String {
            "| \(name) | " + v.map { String(format: "%.2f", $0) }.joined(separator: " | ") + " |\n"
        }
        s += "walkers' median error (m) against the truth s seconds earlier:\n"
        s += "| stage | " + (0..<walkerLag.positions.count).map { "\($0) s" }.joined(separator: " | ") + " |\n"
        s += "|---|" + String(repeating: "---|", count: walkerLag.positions.count) + "\n"
        s += row("gateways' distances", walkerLag.distances) + row("raw fit", walkerLag.fixes)
        s += row("our position", walkerLag.positions)
        s += "room changes of tags standing still: \(staticFlaps.count)\n"
        for f in staticFlaps { s += "- \(f)\n" }
        return s
    }

    /// docs/PRESENCE.md's targets for every world.
    enum Target: Sendable, Hashable, CaseIterable {
        /// Static tags in the right room ≥ 95 %.
        case staticRoom
        /// Walkers in the right room ≥ 85 %, and not below the baseline.
        case walkerRoom
        /// Room changes of tags standing still ≤ 0.1 per tag-hour.
        case standingFlaps
        /// The median position error ≥ 30 % below the baseline's.
        case positionGain
    }

    /// A target missed, and by how much.
    struct Miss: Sendable, CustomStringConvertible {
        var target: Target
        var description: String
    }

    /// What this score says of each target: the ones missed, empty when all are met. (The floor's target, right
    /// ≥ 98 %, needs a world with floors; the room changes counted are those of tags that never move, not yet of
    /// walkers during their pauses.)
    var missedTargets: [Miss] {
        func pct(_ v: Double) -> String { String(format: "%.1f %%", v * 100) }
        var missed: [Miss] = []
        if ours.staticRoomAccuracy < 0.95 {
            missed.append(
                Miss(
                    target: .staticRoom,
                    description: "static tags in the right room \(pct(ours.staticRoomAccuracy)) < 95 %"))
        }
        if ours.walkerRoomAccuracy < 0.85 {
            missed.append(
                Miss(
                    target: .walkerRoom, description: "walkers in the right room \(pct(ours.walkerRoomAccuracy)) < 85 %"
                ))
        }
        if ours.walkerRoomAccuracy < baseline.walkerRoomAccuracy {
            missed.append(
                Miss(
                    target: .walkerRoom,
                    description: "walkers in the right room \(pct(ours.walkerRoomAccuracy)) < the baseline's "
                        + pct(baseline.walkerRoomAccuracy)))
        }
        if ours.staticFlapsPerHour > 0.1 {
            missed.append(
                Miss(
                    target: .standingFlaps,
                    description: String(
                        format: "%.2f room changes per standing tag-hour > 0.1", ours.staticFlapsPerHour)))
        }
        let gain = 1 - ours.medianError / baseline.medianError
        if !(gain >= 0.3) {
            missed.append(
                Miss(target: .positionGain, description: "median error \(pct(gain)) below the baseline's < 30 %"))
        }
        return missed
    }

    /// The targets missed, each once.
    var missed: Set<Target> { Set(missedTargets.map(\.target)) }

    func table() -> String {
        func f(_ v: Double, _ d: Int = 2) -> String { String(format: "%.\(d)f", v) }
        func pct(_ v: Double) -> String { f(v * 100, 1) + " %" }
        var s =
            "| algorithm | room, static | room, walkers | median error (m) | p90 error (m) | median static / walkers (m) | flaps/h static |\n"
        s += "|---|---|---|---|---|---|---|\n"
        for a in [ours, baseline] {
            s +=
                "| \(a.name) | \(pct(a.staticRoomAccuracy)) | \(pct(a.walkerRoomAccuracy)) | \(f(a.medianError)) | "
                + "\(f(a.p90Error)) | \(f(a.staticMedianError)) / \(f(a.walkerMedianError)) | \(f(a.staticFlapsPerHour, 2)) |\n"
        }
        let gain = 1 - ours.medianError / baseline.medianError
        s +=
            "\n\(staticTags) static tags, \(walkers) walkers, \(f(hours, 2)) h, \(readings) gateway readings; "
            + "median error \(f(gain * 100, 1)) % below the baseline's\n"
        return s
    }
}

/// The ESPresense companion's default locator (Nadaraya–Watson): the nodes' positions weighted by 1/d²; with fewer
/// than three nodes, the midpoint of the two nearest (or the one node). The room is the one containing the point
/// (else the nearest room), with no hysteresis, as there.
enum NadarayaWatsonBaseline {
    static func locate(_ ranges: [(x: Double, y: Double, d: Double)]) -> (x: Double, y: Double)? {
        guard !ranges.isEmpty else { return nil }
        let sorted = ranges.sorted { $0.d < $1.d }
        if sorted.count == 1 { return (sorted[0].x, sorted[0].y) }
        if sorted.count == 2 { return ((sorted[0].x + sorted[1].x) / 2, (sorted[0].y + sorted[1].y) / 2) }
        var w = 0.0
        var x = 0.0
        var y = 0.0
        for r in sorted {
            let k = 1 / max(r.d * r.d, 1e-6)
            w += k
            x += k * r.x
            y += k * r.y
        }
        return (x / w, y / w)
    }
}

func scorePresence(_ setup: PresenceScoreSetup) async throws -> PresenceScore {
    var scenario = try ScenarioLoader.load(path: setup.scenarioPath)
    scenario.truthInterval = 1
    guard let siteYAML = scenario.siteYAML else {
        throw RangingScoreError(description: "\(setup.scenarioPath) has no site")
    }
    let site = try SiteDescription(text: siteYAML, path: "site")
    let dir = NSTemporaryDirectory() + "presence-score-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
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

    struct Receiver {
        var id: String
        var host: HCISocketHost
        var ranging: RangingEngine
        var resolver = PrivateAddressResolver(keys: [])
        var reports = 0
    }
    var receivers: [Receiver] = []
    for g in scenario.gateways {
        let host = try HCISocketHost(path: sim.socketPath(for: g.id))
        try host.startPassiveScan()
        // As the office's gateway_config has it: its path-loss exponent, and each receiver's gain corrected
        // (ranging.rssi_offset_db is the negative of the scenario's rx_offset_db).
        var c = RangingConfiguration()
        c.pathLossExponent = 2.2
        c.rssiOffsetDB = -g.rxOffsetDB
        receivers.append(Receiver(id: g.id, host: host, ranging: RangingEngine(configuration: c)))
    }

    var tuned = site
    setup.tune(&tuned.presence)
    var engine = PresenceEngine(site: tuned)
    // The baseline's inputs: each gateway's newest distance per tag, kept as long as the engine keeps them.
    var latest: [String: [String: (d: Double, ts: Double)]] = [:]
    var ours: [String: [(t: Double, room: String?, x: Double?, y: Double?)]] = [:]
    var theirs: [String: [(t: Double, x: Double, y: Double)]] = [:]
    var readings = 0
    // For the lag table: every distance of the tags, and each second's fit over each gateway's newest one.
    var distances: [(id: String, gateway: String, t: Double, d: Double)] = []
    var newest: [String: [String: (d: Double, accuracy: Double, ts: Double)]] = [:]
    var fixes: [String: [(t: Double, x: Double, y: Double)]] = [:]
    var nextSecond = 1.0

    while clock.now().seconds < setup.seconds && !ended.isSet {
        while clock.sleeperCount == 0 && !ended.isSet { try await Task.sleep(nanoseconds: 20_000) }
        clock.advance(by: setup.step)
        while clock.sleeperCount == 0 && !ended.isSet { try await Task.sleep(nanoseconds: 20_000) }
        let now = clock.now()
        let unix = clock.unixTime()
        for (i, node) in sim.nodes.enumerated() {
            let sent = node.stats.reportsSent
            var r = receivers[i]
            let done = { r.reports >= sent || ended.isSet }
            try r.host.drain(until: done) { packet in
                let e = packet.payload
                guard packet.type == .event, e.count > 3, e[0] == 0x3E else { return }
                let body: (LEAdvertisingReport) -> Void = { report in
                    let sighting = Sighting(report: report, timestamp: unix)
                    let identity = r.resolver.identity(of: sighting)
                    _ = r.ranging.observe(sighting, as: identity, at: now)
                }
                if e[2] == 0x02 { r.reports += LEAdvertisingReport.parseLegacy(e[3...], body) ?? 0 }
                if e[2] == 0x0D { r.reports += LEAdvertisingReport.parseExtended(e[3...], body) ?? 0 }
            }
            for u in r.ranging.tick(at: now) {
                let id = u.identity.id
                readings += 1
                if setup.lagTable, let d = u.distance {
                    distances.append((id, r.id, now.seconds, d))
                    newest[id, default: [:]][r.id] = (d, u.accuracy ?? d * 0.3, unix)
                }
                engine.observe(
                    beacon: id,
                    reading: .init(
                        gateway: r.id, distance: u.distance, accuracy: u.accuracy,
                        rssi: u.filteredRSSI, ts: unix), now: unix)
                if let d = u.distance { latest[id, default: [:]][r.id] = (d, unix) } else { latest[id]?[r.id] = nil }
            }
            receivers[i] = r
        }
        guard now.seconds >= nextSecond else { continue }
        nextSecond += 1
        _ = engine.tick(now: unix)
        let t = now.seconds
        for id in latest.keys {
            if case .inRoom(let room, _, _)? = engine.state(of: id) {
                let p = engine.report(of: id)?.position
                ours[id, default: []].append((t, room, p?.x, p?.y))
            } else {
                ours[id, default: []].append((t, nil, nil, nil))
            }
            let ranges = (latest[id] ?? [:]).compactMap { gw, v -> (x: Double, y: Double, d: Double)? in
                guard unix - v.ts <= site.presence.windowS, let p = site.gateways[gw]?.position else { return nil }
                return (p.x, p.y, v.d)
            }
            if setup.lagTable {
                // A reading is due every second: a fit over those of the last 1.5 s is what the gateways say now.
                let current = (newest[id] ?? [:]).compactMap { gw, v -> PositionSolver.Range? in
                    guard unix - v.ts <= 1.5, let p = site.gateways[gw]?.position else { return nil }
                    return PositionSolver.Range(gateway: p, distance: v.d, accuracy: v.accuracy)
                }
                if current.count >= 3, let f = PositionSolver.solve(current, z: site.presence.tagHeightM) {
                    fixes[id, default: []].append((t, f.x, f.y))
                }
            }
            if let p = NadarayaWatsonBaseline.locate(ranges) { theirs[id, default: []].append((t, p.x, p.y)) }
        }
    }
    while !ended.isSet {
        clock.advance(by: setup.step)
        try await Task.sleep(nanoseconds: 100_000)
    }
    try await run.value
    let truth = try GroundTruthPositions(path: options.truthPath!)
    var score = try scorePresence(setup, site: site, truth: truth, ours: ours, theirs: theirs, readings: readings)
    guard setup.lagTable else { return score }
    let walkers = Set(truth.roles.filter { $0.value == "tag" }.keys)
    let z = site.presence.tagHeightM
    score.walkerLag.distances = medianErrorBehind { shift in
        distances.lazy.filter { walkers.contains($0.id) && $0.t >= setup.warmUp }.compactMap { e in
            guard let p = truth.position(e.id, at: e.t - shift), let g = site.gateways[e.gateway]?.position else {
                return nil
            }
            return abs(
                e.d - ((p.x - g.x) * (p.x - g.x) + (p.y - g.y) * (p.y - g.y) + (g.z - z) * (g.z - z)).squareRoot())
        }
    }
    score.walkerLag.fixes = medianErrorBehind { shift in
        walkers.flatMap { id in
            (fixes[id] ?? []).filter { $0.t >= setup.warmUp }.compactMap { f in
                truth.position(id, at: f.t - shift).map { hypot(f.x - $0.x, f.y - $0.y) }
            }
        }
    }
    score.walkerLag.positions = medianErrorBehind { shift in
        walkers.flatMap { id in
            (ours[id] ?? []).filter { $0.t >= setup.warmUp }.compactMap { s in
                guard let x = s.x, let y = s.y, let p = truth.position(id, at: s.t - shift) else { return nil }
                return hypot(x - p.x, y - p.y)
            }
        }
    }
    var right = 0
    var total = 0
    for id in walkers {
        for f in fixes[id] ?? [] where f.t >= setup.warmUp {
            guard let p = truth.position(id, at: f.t), let r = site.room(containing: p.x, p.y) else { continue }
            total += 1
            if site.room(containing: f.x, f.y) == r { right += 1 }
        }
    }
    score.rawFixWalkerRoomAccuracy = Double(right) / Double(max(total, 1))
    return score
}

/// The median of each shift's errors, for shifts of 0…6 s.
private func medianErrorBehind(_ errors: (Double) -> [Double]) -> [Double] {
    (0...6).map { median(errors(Double($0))) }
}

extension SiteDescription {
    /// The id of the room whose polygon holds the point, on any floor (the office has one).
    fileprivate func room(containing x: Double, _ y: Double) -> String? {
        rooms.first { Geometry.contains($0.polygon, .init(x, y)) }?.id
    }
}

private func scorePresence(
    _ setup: PresenceScoreSetup, site: SiteDescription, truth: GroundTruthPositions,
    ours: [String: [(t: Double, room: String?, x: Double?, y: Double?)]],
    theirs: [String: [(t: Double, x: Double, y: Double)]],
    readings: Int
) throws -> PresenceScore {
    func room(_ x: Double, _ y: Double) -> String? {
        site.rooms.first { Geometry.contains($0.polygon, .init(x, y)) }?.id
    }
    /// The baseline's room: the one containing the point, else the nearest.
    func nearestRoom(_ x: Double, _ y: Double) -> String {
        site.rooms.max {
            Geometry.signedDistance($0.polygon, .init(x, y)) < Geometry.signedDistance($1.polygon, .init(x, y))
        }!.id
    }
    var misses: [PresenceScore.WalkerMiss: Int] = [:]
    let scored = truth.roles.filter { ($0.value == "beacon" || $0.value == "tag") && ours[$0.key] != nil }
    var staticTags = 0
    var walkers = 0
    var flapLines: [String] = []
    func algorithm(_ name: String, _ series: [String: [(t: Double, room: String?, x: Double?, y: Double?)]])
        -> PresenceAlgorithmScore
    {
        var right = (s: 0, w: 0)
        var total = (s: 0, w: 0)
        var errors: [Double] = []
        var staticErrors: [Double] = []
        var walkerErrors: [Double] = []
        var flaps = 0
        flapLines = []
        staticTags = 0
        walkers = 0
        for (id, role) in scored.sorted(by: { $0.key < $1.key }) {
            let isStatic = role == "beacon"
            if isStatic { staticTags += 1 } else { walkers += 1 }
            var previous: String?
            for s in series[id] ?? [] where s.t >= setup.warmUp {
                guard let p = truth.position(id, at: s.t) else { continue }
                if let r = room(p.x, p.y) {
                    if isStatic {
                        total.s += 1
                        if s.room == r { right.s += 1 }
                    } else {
                        total.w += 1
                        if s.room == r { right.w += 1 }
                    }
                }
                if let x = s.x, let y = s.y {
                    let e = hypot(x - p.x, y - p.y)
                    errors.append(e)
                    if isStatic { staticErrors.append(e) } else { walkerErrors.append(e) }
                }
                if isStatic, let r = s.room {
                    if let q = previous, q != r {
                        flaps += 1
                        let at = s.x.flatMap { x in s.y.map { String(format: "(%.1f, %.1f)", x, $0) } } ?? "no position"
                        let truth = String(format: "(%.1f, %.1f)", p.x, p.y)
                        flapLines.append("\(id) at \(Int(s.t)) s: \(q) → \(r), placed at \(at), standing at \(truth)")
                    }
                    previous = r
                }
            }
        }
        let hours = (setup.seconds - setup.warmUp) / 3600
        return PresenceAlgorithmScore(
            name: name, staticRoomAccuracy: Double(right.s) / Double(max(total.s, 1)),
            walkerRoomAccuracy: Double(right.w) / Double(max(total.w, 1)), medianError: median(errors),
            p90Error: percentile(errors, 0.9), staticMedianError: median(staticErrors),
            walkerMedianError: median(walkerErrors),
            staticFlapsPerHour: Double(flaps) / Double(max(staticTags, 1)) / hours, positions: errors.count)
    }
    let mine = algorithm("fleet presence (robust least squares, hysteresis)", ours)
    let ourFlaps = flapLines
    for (id, role) in scored where role == "tag" {
        for s in ours[id] ?? [] where s.t >= setup.warmUp {
            guard let p = truth.position(id, at: s.t), let r = room(p.x, p.y), s.room != r else { continue }
            let at = s.x.flatMap { x in s.y.flatMap { y in room(x, y) } }
            misses[.init(truth: r, ours: s.room ?? "away", position: at ?? "none"), default: 0] += 1
        }
    }
    var baselineSeries: [String: [(t: Double, room: String?, x: Double?, y: Double?)]] = [:]
    for (id, s) in theirs { baselineSeries[id] = s.map { ($0.t, nearestRoom($0.x, $0.y), $0.x, $0.y) } }
    let base = algorithm("baseline (Nadaraya–Watson, 1/d²)", baselineSeries)
    return PresenceScore(
        ours: mine, baseline: base, staticTags: staticTags, walkers: walkers,
        hours: (setup.seconds - setup.warmUp) / 3600, readings: readings, walkerMisses: misses,
        staticFlaps: ourFlaps)
}

func percentile(_ v: [Double], _ q: Double) -> Double {
    guard !v.isEmpty else { return .nan }
    let s = v.sorted()
    return s[min(s.count - 1, Int((Double(s.count - 1) * q).rounded()))]
}

/// The `position` lines of a ground-truth file (docs/SIMULATOR.md), by beacon id and second.
struct GroundTruthPositions {
    var byBeacon: [String: [Int: (x: Double, y: Double)]] = [:]
    var roles: [String: String] = [:]

    init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw RangingScoreError(description: "cannot read \(path)")
        }
        for line in text.split(separator: "\n") where line.contains("\"type\":\"position\"") {
            guard let data = line.data(using: .utf8),
                let o = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let t = o["t"] as? Double, let b = o["beacon"] as? String, let role = o["role"] as? String,
                let x = o["x"] as? Double, let y = o["y"] as? Double
            else { throw RangingScoreError(description: "bad truth line: \(line)") }
            byBeacon[b, default: [:]][Int(t.rounded())] = (x, y)
            roles[b] = role
        }
    }

    func position(_ id: String, at t: Double) -> (x: Double, y: Double)? { byBeacon[id]?[Int(t.rounded())] }
}
