import Foundation

/// Which room each tag is in, and where, from every gateway's ranging (docs/PRESENCE.md). Pure: readings and the
/// service's clock in, reports out; the service publishes them.
///
/// Each tag is a small state machine (`TagState`): away until heard, then in a room; another room takes over only
/// after it has led by `margin_m` for `dwell_s` (no flapping at a doorway; at least `settled_dwell_s` for a tag that
/// has been in its room for `settle_s`, whose position is smoothed harder), and a tag no gateway has heard for
/// `away_after_s` is away (`not_home`). Readings are combined by their `ts` (a gateway whose clock is a few
/// seconds off still counts; the fleet gives a gateway with an unsynchronised clock its readings' time on the
/// service's clock, `GatewayClockOffset`), and dropped when the service has not had one from that gateway for `window_s`.
public struct PresenceEngine: Sendable {
    /// One gateway's ranging of one tag, as its beacon topic says.
    public struct Reading: Sendable, Equatable {
        public var gateway: String
        /// Nil when the gateway no longer hears the tag.
        public var distance: Double?
        public var accuracy: Double?
        public var rssi: Double?
        public var ts: Double

        public init(gateway: String, distance: Double?, accuracy: Double?, rssi: Double?, ts: Double) {
            self.gateway = gateway
            self.distance = distance
            self.accuracy = accuracy
            self.rssi = rssi
            self.ts = ts
        }
    }

    public enum TagState: Sendable, Equatable {
        /// Not heard for `away_after_s` (or never placed); `lastRoom` for the page.
        case away(since: Double, lastRoom: String?)
        /// In `room` since `since`; `challenger` is a room that has led by the margin since its own `since`.
        case inRoom(room: String, since: Double, challenger: Challenger?)
    }

    public struct Challenger: Sendable, Equatable {
        public var room: String
        public var since: Double
    }

    /// How the room was decided, in the payload.
    public enum Method: String, Sendable {
        /// From a position fitted over three or more gateways.
        case trilateration
        /// Fewer than three placed gateways: the room of the nearest (a position, if any, is their centroid).
        case nearestGateway = "nearest_gateway"
        /// Distances that agree with no single point: the last good position is kept.
        case lastGoodPosition = "last_good_position"
        case none
    }

    public struct HeardBy: Sendable, Equatable {
        public var gateway: String
        public var distance: Double
        public var accuracy: Double?
        public var rssi: Double?
        public var ts: Double
    }

    public struct Position: Sendable, Equatable {
        public var x: Double
        public var y: Double
        public var floor: String
        public var error: Double
    }

    /// What is published retained on `<prefix>/fleet/presence/<beacon-id>`.
    public struct Report: Sendable, Equatable {
        public var beacon: String
        /// Nil when away (`not_home`).
        public var room: String?
        public var since: Double
        public var confidence: Double
        public var method: Method
        public var position: Position?
        public var gateways: [HeardBy]
        public var ts: Double
    }

    public struct Counters: Sendable, Equatable {
        /// Readings folded.
        public var readings = 0
        /// Readings from gateways the site description does not place (counted; presence ignores them).
        public var unplacedReadings = 0
        /// Fits whose distances contradicted each other (the last good position was kept).
        public var contradictions = 0
        /// Tags beyond `max_tags`, left out.
        public var refusedTags = 0
        /// Readings of a tag from a gateway its settings ignore (`tags[].ignore_gateways`), left out.
        public var ignoredReadings = 0
    }

    struct Tag: Sendable {
        var state: TagState
        var readings: [String: (reading: Reading, receivedAt: Double)] = [:]
        var heardAt: Double
        var filter: PositionFilter?
        /// The same fixes without the quiet filter's lag, for a tag that changed room lately.
        var follower: FollowingFilter?
        /// When the position filter last judged the tag moving.
        var movedAt = -Double.infinity
        /// When the tag last went from one room into another. Arriving from away does not count: a tag that appears
        /// is taken to stay where it appeared (in the office's hour, counting it brought back flaps at the start).
        var roomChangedAt = -Double.infinity
        var method = Method.none
        var confidence = 0.0
        var published: Report?
        var publishedAt = -Double.infinity

        /// In one room for `settle_s`: a tag that stays put (a beacon on a desk, a sensor) or sat down. Its position
        /// is the quiet filter's and it leaves only on evidence lasting `settled_dwell_s`; a tag that changed room
        /// lately is followed closely (`FollowingFilter`).
        func settled(now: Double, _ settings: PresenceSettings) -> Bool { now - roomChangedAt >= settings.settleS }

        /// The position the room is decided on and that is published.
        func estimate(now: Double, _ settings: PresenceSettings) -> (x: Double, y: Double, error: Double)? {
            guard let f = filter else { return nil }
            if !settled(now: now, settings), let g = follower { return (g.x, g.y, g.error) }
            return (f.x, f.y, f.error)
        }
    }

    public private(set) var site: SiteDescription
    var tags: [String: Tag] = [:]
    public private(set) var counters = Counters()
    /// Gateways heard that the site does not place, for the page (bounded).
    public private(set) var unplacedGateways: Set<String> = []
    /// A report is repeated at least this often while the tag is followed.
    static let heartbeatS = 30.0

    public init(site: SiteDescription) { self.site = site }

    public var tagCount: Int { tags.count }

    /// A new site description: rooms and positions change, the tags' states stay (their rooms are decided again).
    public mutating func replaceSite(_ site: SiteDescription) {
        self.site = site
        unplacedGateways = []
        for id in tags.keys {
            tags[id]!.filter = nil
            tags[id]!.follower = nil
        }
    }

    // MARK: Events

    /// One beacon topic message (the gateway's reading for the tag).
    public mutating func observe(beacon: String, reading: Reading, now: Double) {
        var reading = reading
        if let own = site.tags[beacon] {
            if own.ignoreGateways.contains(reading.gateway) {
                counters.ignoredReadings += 1
                return
            }
            // The tag's own calibration: its distance again from the RSSI, its accuracy in proportion.
            if let d = reading.distance, let rssi = reading.rssi,
                let mine = own.distance(rssi: rssi, pathLossExponent: site.presence.pathLossExponent)
            {
                if let a = reading.accuracy, d > 0 { reading.accuracy = a * mine / d }
                reading.distance = mine
            }
        }
        let placed = site.gateways[reading.gateway] != nil
        if !placed {
            counters.unplacedReadings += 1
            if unplacedGateways.count < 1_000 { unplacedGateways.insert(reading.gateway) }
            return
        }
        if tags[beacon] == nil {
            guard site.presence.beacons.isEmpty || site.presence.beacons.contains(beacon) else { return }
            guard tags.count < site.presence.maxTags else {
                counters.refusedTags += 1
                return
            }
            guard reading.distance != nil else { return }
            tags[beacon] = Tag(state: .away(since: now, lastRoom: nil), heardAt: now)
        }
        counters.readings += 1
        // A reading without a distance says the gateway stopped hearing the tag, which a beacon that advertises
        // every few seconds does after one lost packet: its last distance counts until `window_s` passes.
        if let d = reading.distance, d.isFinite, d >= 0 {
            tags[beacon]!.readings[reading.gateway] = (reading, now)
            tags[beacon]!.heardAt = now
        }
    }

    /// Once a second: every tag's room and position decided again; the reports that changed (or are due again).
    public mutating func tick(now: Double) -> [Report] {
        var out: [Report] = []
        for id in tags.keys.sorted() {
            if let r = decide(id, now: now) { out.append(r) }
        }
        // Forget tags away for long (their retained report says not_home; the next reading brings them back).
        tags = tags.filter { _, t in
            if case .away(let since, _) = t.state { return now - since < 24 * 3600 } else { return true }
        }
        return out
    }

    /// Every tag's report is due at the next tick, changed or not (a standby fleet service taking over).
    public mutating func republishAll() {
        for id in tags.keys { tags[id]!.publishedAt = -.infinity }
    }

    public func state(of beacon: String) -> TagState? { tags[beacon]?.state }
    public func report(of beacon: String) -> Report? { tags[beacon]?.published }
    public var reports: [Report] { tags.keys.sorted().compactMap { tags[$0]!.published } }

    // MARK: Deciding

    mutating func decide(_ id: String, now: Double) -> Report? {
        var tag = tags[id]!
        let settings = site.presence(for: id)
        // Fresh, and from gateways the site (perhaps replaced since they came) still places.
        tag.readings = tag.readings.filter {
            now - $0.value.receivedAt <= settings.windowS && site.gateways[$0.key] != nil
        }
        let newest = tag.readings.values.map(\.reading.ts).max() ?? 0
        let fresh = tag.readings.values.map(\.reading).filter { newest - $0.ts <= settings.windowS }
            .sorted { ($0.distance!, $0.gateway) < ($1.distance!, $1.gateway) }

        if fresh.isEmpty {
            if case .inRoom(let room, _, _) = tag.state, now - tag.heardAt >= settings.awayAfterS {
                tag.state = .away(since: now, lastRoom: room)
                tag.method = .none
                tag.confidence = 0
            }
            tags[id] = tag
            return publishIfDue(id, fresh: [], now: now)
        }

        // The floor is the nearest gateway's; only gateways on it place the tag.
        let nearest = fresh[0]
        let floorID = site.room(site.gateways[nearest.gateway]!.room)!.floor
        let floorZ = site.floor(floorID)?.z ?? 0
        let onFloor = fresh.filter { site.room(site.gateways[$0.gateway]!.room)?.floor == floorID }
        let ranges: [PositionSolver.Range] = onFloor.compactMap { r in
            guard let p = site.gateways[r.gateway]!.position else { return nil }
            return PositionSolver.Range(gateway: p, distance: r.distance!, accuracy: r.accuracy ?? r.distance! * 0.3)
        }
        if tag.filter?.floor != floorID {
            tag.filter = nil
            tag.follower = nil
        }
        let z = floorZ + settings.tagHeightM
        var scores: [String: Double] = [:]
        var geometric = false
        if let fix = PositionSolver.solve(ranges, z: z) {
            // A fit that agrees with no point, or places the tag well outside every room on its floor (a gateway
            // reporting at the wrong scale can pull it there), is not a position: keep the last good one.
            let plausible = site.rooms.contains {
                $0.floor == floorID && Geometry.signedDistance($0.polygon, .init(fix.x, fix.y)) >= -settings.outsideM
            }
            if fix.method == .trilateration && (!fix.consistent || !plausible) {
                counters.contradictions += 1
                tag.method = .lastGoodPosition
                tag.filter?.inflate(now: now, speed: settings.walkingSpeedMPS)
                tag.follower?.inflate(now: now, speed: settings.walkingSpeedMPS)
            } else {
                tag.filter = PositionFilter.update(
                    tag.filter, fix: fix, floor: floorID, now: now, speed: settings.walkingSpeedMPS)
                if tag.follower == nil {
                    tag.follower = FollowingFilter(fix: fix, now: now)
                } else {
                    tag.follower!.update(fix, now: now, speed: settings.walkingSpeedMPS)
                }
                let moving = tag.settled(now: now, settings) ? tag.filter!.moving : tag.follower!.moving
                if moving { tag.movedAt = now }
                tag.method = fix.method == .trilateration ? .trilateration : .nearestGateway
            }
            if let e = tag.estimate(now: now, settings), tag.method != .nearestGateway {
                geometric = true
                let p = SiteDescription.Point(e.x, e.y)
                for room in site.rooms where room.floor == floorID {
                    scores[room.id] = Geometry.signedDistance(room.polygon, p)
                }
            }
        } else {
            tag.filter = nil
            tag.follower = nil
            tag.method = .nearestGateway
        }
        if !geometric {
            // Nearer gateway, higher score: the room of the nearest gateway leads by how much nearer it is.
            for r in onFloor {
                let room = site.gateways[r.gateway]!.room
                scores[room] = max(scores[room] ?? -.infinity, -r.distance!)
            }
        }
        let leader = scores.max { ($0.value, $1.key) < ($1.value, $0.key) }!.key

        switch tag.state {
        case .away:
            // Arriving needs no dwell: there is no room to flap back to.
            tag.state = .inRoom(room: leader, since: now, challenger: nil)
        case .inRoom(let room, let since, let challenger):
            let current = scores[room] ?? -.infinity
            // A tag the position filter has seen standing still changes room only on evidence that lasts
            // `still_dwell_s`: its estimate wanders slowly with the noise, and a slow wander across a doorway is
            // not a walk through it.
            let still = geometric && now - tag.movedAt >= settings.stillAfterS
            let lead = scores[leader]! - current
            // A tag walking through a doorway soon leads by several times the margin; one wandering near it leads by
            // about the margin. So a moving tag's dwell shortens as its lead grows: half of `dwell_s` at the margin,
            // less beyond (in the office's hour, walkers' room right 82.1 % → 83.9 % then, still 0 flaps).
            var dwell = still ? settings.stillDwellS : settings.dwellS * min(1, settings.marginM / (2 * lead))
            // A settled tag that seems to walk may be a tag standing 1–3 m from a wall whose fits make an excursion
            // of a few seconds across it (in the office's hours, 4–13 s): only a longer lead takes it out.
            if geometric && tag.settled(now: now, settings) { dwell = max(dwell, settings.settledDwellS) }
            if leader != room, lead >= settings.marginM {
                if let c = challenger, c.room == leader {
                    if now - c.since >= dwell {
                        tag.state = .inRoom(room: leader, since: now, challenger: nil)
                        tag.roomChangedAt = now
                    }
                } else {
                    tag.state = .inRoom(room: room, since: since, challenger: Challenger(room: leader, since: now))
                }
            } else if challenger != nil {
                tag.state = .inRoom(room: room, since: since, challenger: nil)
            }
        }
        tag.confidence = confidence(
            tag, scores: scores, geometric: geometric, fresh: onFloor, now: now, settings: settings)
        tags[id] = tag
        return publishIfDue(id, fresh: fresh, now: now)
    }

    /// 0…1: for a position, the share of its error circle inside the room; for the nearest gateway, how much nearer
    /// it is than the next; halved when the distances contradict each other.
    func confidence(
        _ tag: Tag, scores: [String: Double], geometric: Bool, fresh: [Reading], now: Double,
        settings: PresenceSettings
    ) -> Double {
        guard case .inRoom(let room, _, _) = tag.state else { return 0 }
        var c: Double
        if geometric, let f = tag.estimate(now: now, settings), let polygon = site.room(room)?.polygon {
            var inside = Geometry.contains(polygon, .init(f.x, f.y)) ? 1 : 0
            let n = 16
            for k in 0..<n {
                let a = Double(k) * 2 * .pi / Double(n)
                if Geometry.contains(polygon, .init(f.x + f.error * cos(a), f.y + f.error * sin(a))) { inside += 1 }
            }
            c = Double(inside) / Double(n + 1)
        } else {
            let inRoom = fresh.filter { site.gateways[$0.gateway]?.room == room }.map { $0.distance! }.min()
            let other = fresh.filter { site.gateways[$0.gateway]?.room != room }.map { $0.distance! }.min()
            switch (inRoom, other) {
            case (let a?, let b?): c = 0.5 + 0.5 * max(-1, min(1, (b - a) / (a + b + 0.1)))
            case (_?, nil): c = 0.5
            default: c = 0.2
            }
        }
        if tag.method == .lastGoodPosition { c *= 0.5 }
        return (c * 100).rounded() / 100
    }

    mutating func publishIfDue(_ id: String, fresh: [Reading], now: Double) -> Report? {
        let tag = tags[id]!
        var report = Report(
            beacon: id, room: nil, since: now, confidence: tag.confidence, method: tag.method,
            position: nil, gateways: [], ts: now)
        switch tag.state {
        case .away(let since, _):
            report.since = since
        case .inRoom(let room, let since, _):
            report.room = room
            report.since = since
            if let f = tag.filter, let e = tag.estimate(now: now, site.presence(for: id)) {
                report.position = Position(
                    x: (e.x * 100).rounded() / 100, y: (e.y * 100).rounded() / 100, floor: f.floor,
                    error: (e.error * 100).rounded() / 100)
            }
            report.gateways = fresh.map {
                HeardBy(gateway: $0.gateway, distance: $0.distance!, accuracy: $0.accuracy, rssi: $0.rssi, ts: $0.ts)
            }
        }
        if let last = tag.published, now - tag.publishedAt < Self.heartbeatS, !Self.differs(last, report) { return nil }
        tags[id]!.published = report
        tags[id]!.publishedAt = now
        return report
    }

    /// Whether `b` says something `a` did not: another room or method, confidence moved by 0.1, the position by half
    /// its error (at least 0.5 m).
    static func differs(_ a: Report, _ b: Report) -> Bool {
        if a.room != b.room || a.since != b.since || a.method != b.method { return true }
        if abs(a.confidence - b.confidence) >= 0.1 { return true }
        switch (a.position, b.position) {
        case (nil, nil): return false
        case (let p?, let q?):
            return p.floor != q.floor || hypot(p.x - q.x, p.y - q.y) >= max(0.5, q.error / 2)
                || abs(p.error - q.error) >= 0.5
        default: return true
        }
    }
}

/// A position smoothed in time: each axis a Kalman filter, corrected by each fix with its own error. Between fixes
/// the variance grows by the squared speed the tag may be moving at: `quietSpeed` while the fixes agree with the
/// estimate (a tag standing still: long averaging, no wandering across a doorway), the walking speed once a fix
/// falls outside what the estimate allows (a tag that moves is followed at once).
struct PositionFilter: Sendable, Equatable {
    var estimate: PlanarEstimate
    var floor: String
    var at: Double
    var moving = true
    var outside = true

    var x: Double { estimate.x }
    var y: Double { estimate.y }
    var variance: Double { estimate.variance }

    /// m/s: how fast a tag judged still may drift.
    static let quietSpeed = 0.1
    /// Normalised innovation (χ², 2 degrees of freedom) beyond which the tag is moving: 95 %.
    static let movingThreshold = 5.99

    var error: Double { (2 * variance).squareRoot() }

    static func update(_ f: PositionFilter?, fix: PositionSolver.Fix, floor: String, now: Double, speed: Double)
        -> PositionFilter
    {
        guard var f else { return PositionFilter(estimate: PlanarEstimate(fix), floor: floor, at: now) }
        let r = PlanarEstimate.measurementVariance(fix)
        let dt = max(now - f.at, 0)
        let quiet = f.variance + quietSpeed * quietSpeed * dt
        // Two fixes in a row outside the bounds: one is an outlier, two are a walk.
        let outside = f.estimate.squaredDistance(to: fix) / (quiet + r) > movingThreshold
        f.moving = outside && f.outside
        f.outside = outside
        f.estimate.variance = f.moving ? f.variance + speed * speed * dt : quiet
        f.estimate.correct(by: fix)
        f.at = now
        return f
    }

    /// Time passes without a trusted fix: the position is kept, its uncertainty grows.
    mutating func inflate(now: Double, speed: Double) {
        estimate.variance += speed * speed * max(now - at, 0)
        at = now
    }
}
