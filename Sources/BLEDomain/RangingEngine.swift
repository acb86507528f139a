import BLEHCI
import BLETransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ranges every beacon heard: one filter per identity (so the same beacon heard from two addresses,
/// or across a private-address rotation once resolved, is one beacon), per-interval updates, and
/// bounded memory.
///
/// Pure: readings and times in (`observe`), updates out (`tick`); the caller owns the clock and
/// calls `tick(at:)` at least once per interval. Storage is a slab of fixed-size tracks indexed by
/// a dictionary, threaded on a least-recently-heard list, so a reading costs one hash lookup, a
/// list splice and the filter, and a flood of new addresses evicts in O(1) each.
public struct RangingEngine: Sendable {
    public let configuration: RangingConfiguration
    /// k = 10·n / ln 10: RSSI = P₁ₘ − k·ln d.
    @usableFromInline let k: Double
    @usableFromInline var index: [RangingKey: Int32] = [:]
    @usableFromInline var tracks: [RangingTrack] = []
    @usableFromInline var free: [Int32] = []
    /// Most and least recently heard live tracks (-1: none).
    @usableFromInline var head: Int32 = -1
    @usableFromInline var tail: Int32 = -1
    @usableFromInline var nextTick: Double?
    @usableFromInline let hasNameOverrides: Bool
    public internal(set) var statistics = RangingStatistics()

    public init(configuration: RangingConfiguration = RangingConfiguration()) {
        precondition(configuration.capacity > 0 && configuration.interval > .zero)
        self.configuration = configuration
        k = 10 * configuration.pathLossExponent / 2.302_585_092_994_046
        hasNameOverrides = configuration.calibrationOverrides.contains { $0.matcher.needsName }
        index.reserveCapacity(min(configuration.capacity, 1 << 16))
    }

    /// The calibration a frame advertises, as RSSI at 1 m: iBeacon's measured power and AltBeacon's
    /// reference RSSI are at 1 m; Eddystone's ranging data is "the received power at 0 meters",
    /// 41 dB above 1 m (eddystone-uid.md, "Tx Power"); a TX Power Level (AD type 0x0A) is the
    /// transmitted power, likewise about 41 dB (free-space loss at 1 m, 2.4 GHz) above it.
    @inlinable public static func frameCalibration(of sighting: Sighting) -> Double? {
        switch sighting.advertisement.beacon {
        case .iBeacon(let b)?: return Double(b.measuredPower)
        case .altBeacon(let b)?: return Double(b.referenceRSSI)
        case .eddystoneUID(let b)?: return Double(b.txPowerAt0m) - 41
        case .eddystoneURL(let b)?: return Double(b.txPowerAt0m) - 41
        default: return sighting.txPower.map { Double($0) - 41 }
        }
    }

    /// Folds one decoded sighting into the beacon `identity` stands for (its own, or the one a
    /// `PrivateAddressResolver` found). Returns the beacon's filtered RSSI after it, if any.
    @discardableResult
    public mutating func observe(_ sighting: Sighting, as identity: BeaconIdentity, at now: Duration) -> Double? {
        observe(
            identity, address: sighting.address, rssi: sighting.rssi,
            frameCalibration: Self.frameCalibration(of: sighting),
            name: hasNameOverrides ? sighting.advertisement.nameBytes : nil, at: now)
    }

    /// Folds one reading in. `rssi` nil (127 on the wire) counts as a sample but never as a number.
    @discardableResult
    public mutating func observe(
        _ identity: BeaconIdentity, address: BDAddress, rssi: Int8?, frameCalibration: Double?,
        name: ArraySlice<UInt8>? = nil, at now: Duration
    ) -> Double? {
        let t = now.seconds
        statistics.samples += 1
        let i = slot(for: identity, at: t)
        touch(i)
        let j = Int(i)
        let frame = frameCalibration.map { Int16(($0 * 4).rounded()) } ?? RangingTrack.noFrame
        if !tracks[j].calibrated || frame != tracks[j].frameCalibration
            || (name != nil && hasNameOverrides && tracks[j].calibration != .configuration)
        {
            // Rare: a new track, or a frame whose calibration changed.
            var track = tracks[j]
            track.frameCalibration = frame
            track.calibrated = true
            calibrate(&track, frame: frameCalibration, name: name)
            tracks[j] = track
        }
        if rssi == nil { statistics.samplesWithoutRSSI += 1 }
        let k = self.k
        let c = configuration.filter
        let offset = configuration.rssiOffsetDB
        // The per-reading fields through one pointer: each `tracks[j].x = …` would check the index and the
        // buffer's uniqueness again, and a whole-track copy costs more than the filter.
        return tracks.withUnsafeMutableBufferPointer { b -> Double? in
            let p = b.baseAddress! + j
            p.pointee.address = address
            p.pointee.lastHeard = t
            p.pointee.samples &+= 1
            p.pointee.unknownAnnounced = false
            let a = p.pointee.rssiAt1m
            if let rssi {
                // The interval's raw moments, beside the filter: an honest figure shows what went in.
                let r = Int32(rssi)
                p.pointee.rawCount &+= 1
                p.pointee.rawSum &+= r
                p.pointee.rawSquares &+= r * r
            }
            guard let rssi else {
                return p.pointee.filter.map { a - k * log($0.estimate(at: t).distance) }
            }
            let corrected = Double(rssi) + offset
            if p.pointee.filter != nil {
                return p.pointee.filter!.update(rssi: corrected, rssiAt1m: a, at: t, k: k, configuration: c)
            }
            let f = RangingFilter(rssi: corrected, rssiAt1m: a, at: t, k: k, configuration: c)
            p.pointee.filter = f
            return a - k * log(f.distance)
        }
    }

    /// Updates for the interval that ended, if one did by `now` (else none). Beacons silent for
    /// `unknownAfter` are reported `unknown` once; after `forgetAfter` they are freed.
    public mutating func tick(at now: Duration) -> [RangingUpdate] {
        let t = now.seconds
        let interval = configuration.interval.seconds
        guard let due = nextTick else {
            nextTick = t + interval
            return []
        }
        guard t >= due else { return [] }
        // A caller that fell far behind resumes the schedule from now rather than replaying it.
        nextTick = t - due > interval ? t + interval : due + interval
        var out: [RangingUpdate] = []
        out.reserveCapacity(statistics.tracked)
        let unknownAfter = configuration.unknownAfter.seconds
        let forgetAfter = configuration.forgetAfter.seconds
        var i = head
        while i >= 0 {
            let next = tracks[Int(i)].next
            let silence = t - tracks[Int(i)].lastHeard
            if silence >= forgetAfter {
                release(i)
                statistics.forgotten += 1
            } else if let u = update(i, at: t, now: now, unknown: silence >= unknownAfter) {
                out.append(u)
            }
            i = next
        }
        return out
    }

    public var trackedCount: Int { statistics.tracked }

    /// The memory one tracked beacon costs in the structures above: its track, and its index entry
    /// (key and value at the dictionary's maximum load factor of 3/4), excluding free-list slack.
    public static var bytesPerTrack: Int {
        MemoryLayout<RangingTrack>.stride
            + (MemoryLayout<BeaconIdentity>.stride + MemoryLayout<Int32>.stride) * 4 / 3 + 1
    }

    /// Forgets everything (an adapter restart keeps it: beacons are re-heard within a second).
    public mutating func removeAll() {
        index.removeAll()
        tracks.removeAll()
        free.removeAll()
        head = -1
        tail = -1
        statistics.tracked = 0
    }
}

extension RangingEngine {
    @usableFromInline mutating func slot(for identity: BeaconIdentity, at t: Double) -> Int32 {
        if let i = index[RangingKey(identity)] { return i }
        if statistics.tracked >= configuration.capacity, tail >= 0 {
            let victim = tail
            release(victim)
            statistics.evictions += 1
        }
        let fresh = RangingTrack(identity: identity, rssiAt1m: configuration.defaultRSSIAt1m, lastHeard: t)
        let i: Int32
        if let f = free.popLast() {
            i = f
            tracks[Int(i)] = fresh
        } else {
            i = Int32(tracks.count)
            tracks.append(fresh)
        }
        index[RangingKey(identity)] = i
        statistics.tracked += 1
        return i
    }

    /// Moves track `i` to the head of the recently-heard list (linking it in if new).
    @usableFromInline mutating func touch(_ i: Int32) {
        guard head != i else { return }
        tracks.withUnsafeMutableBufferPointer { b in
            let p = b[Int(i)].prev
            let n = b[Int(i)].next
            if p >= 0 { b[Int(p)].next = n }
            if n >= 0 { b[Int(n)].prev = p }
            if tail == i { tail = p }
            b[Int(i)].prev = -1
            b[Int(i)].next = head
            if head >= 0 { b[Int(head)].prev = i }
            head = i
            if tail < 0 { tail = i }
        }
    }

    @usableFromInline mutating func release(_ i: Int32) {
        let p = tracks[Int(i)].prev
        let n = tracks[Int(i)].next
        if p >= 0 { tracks[Int(p)].next = n } else { head = n }
        if n >= 0 { tracks[Int(n)].prev = p } else { tail = p }
        index.removeValue(forKey: RangingKey(tracks[Int(i)].identity))
        tracks[Int(i)].filter = nil
        tracks[Int(i)].prev = -1
        tracks[Int(i)].next = -1
        free.append(i)
        statistics.tracked -= 1
    }

    /// Configuration override, else a plausible frame value, else the default (flagged if the
    /// frame's was nonsense).
    @usableFromInline mutating func calibrate(_ track: inout RangingTrack, frame: Double?, name: ArraySlice<UInt8>?) {
        let c = configuration
        if let o = c.calibrationOverrides.first(where: { $0.matcher.matches(track.identity, name: name) }) {
            track.rssiAt1m = o.rssiAt1m
            track.calibration = .configuration
        } else if let frame, c.plausibleRSSIAt1m.contains(frame) {
            track.rssiAt1m = frame
            track.calibration = .frame
        } else {
            track.rssiAt1m = c.defaultRSSIAt1m
            if frame != nil {
                if track.calibration != .untrustedFrame { statistics.untrustedCalibrations += 1 }
                track.calibration = .untrustedFrame
            } else {
                track.calibration = .default
            }
        }
    }

    /// Track `i`'s update for the interval ending at `t`, after the publishing policy.
    mutating func update(_ i: Int32, at t: Double, now: Duration, unknown: Bool) -> RangingUpdate? {
        var tr = tracks[Int(i)]
        defer { tracks[Int(i)] = tr }
        let samples = Int(tr.samples)
        tr.samples = 0
        let (n, sum, squares) = (Double(tr.rawCount), Double(tr.rawSum), Double(tr.rawSquares))
        (tr.rawCount, tr.rawSum, tr.rawSquares) = (0, 0, 0)
        if unknown && tr.unknownAnnounced { return nil }
        var u = RangingUpdate(
            identity: tr.identity, time: now, address: tr.address, samples: samples, filteredRSSI: nil,
            rssiAt1m: tr.rssiAt1m, calibration: tr.calibration, distance: nil, accuracy: nil, proximity: .unknown)
        if n > 0 {
            u.rawRSSIMean = sum / n
            // The sample variance (n − 1): the spread of single readings, which the filter's σ should match.
            u.rawRSSIVariance = n > 1 ? max(0, (squares - sum * sum / n) / (n - 1)) : nil
        }
        if !unknown, let f = tr.filter {
            let e = f.estimate(at: t)
            u.distance = e.distance
            u.accuracy = e.sigma
            u.filteredRSSI = tr.rssiAt1m - k * log(e.distance)
            u.proximity = proximity(e.distance, previous: tr.proximity)
        }
        if unknown { tr.unknownAnnounced = true }
        tr.proximity = u.proximity
        if case .onChange(let fraction, let minimum, let heartbeat) = configuration.publishing {
            let moved: Bool
            if let d = u.distance, tr.publishedDistance >= 0 {
                moved = abs(d - tr.publishedDistance) > max(fraction * tr.publishedDistance, minimum)
            } else {
                moved = u.distance != nil
            }
            let changed = u.proximity != tr.publishedProximity
            guard changed || moved || t - tr.publishedAt >= heartbeat.seconds else {
                statistics.suppressedUpdates += 1
                return nil
            }
        }
        tr.publishedProximity = u.proximity
        tr.publishedDistance = u.distance ?? -1
        tr.publishedAt = t
        return u
    }

    /// The band for `d`, leaving `previous` only once `d` is `proximityHysteresis` past the edge.
    @usableFromInline func proximity(_ d: Double, previous: Proximity) -> Proximity {
        let c = configuration
        let m = c.proximityHysteresis
        let plain: Proximity = d < c.immediateBelow ? .immediate : d < c.nearBelow ? .near : .far
        switch (previous, plain) {
        case (.immediate, .near) where d < c.immediateBelow * (1 + m): return .immediate
        case (.near, .immediate) where d > c.immediateBelow * (1 - m): return .near
        case (.near, .far) where d < c.nearBelow * (1 + m): return .near
        case (.far, .near) where d > c.nearBelow * (1 - m): return .far
        default: return plain
        }
    }
}

/// One tracked beacon: fixed size, no references but its key (about 200 bytes; see the benchmark).
@usableFromInline struct RangingTrack: Sendable {
    @usableFromInline static let noFrame = Int16.min

    @usableFromInline var identity: BeaconIdentity
    @usableFromInline var address = BDAddress(rawValue: 0)
    @usableFromInline var filter: RangingFilter?
    @usableFromInline var rssiAt1m: Double
    @usableFromInline var lastHeard: Double
    @usableFromInline var publishedDistance = -1.0
    @usableFromInline var publishedAt = -Double.infinity
    @usableFromInline var prev: Int32 = -1
    @usableFromInline var next: Int32 = -1
    @usableFromInline var samples: Int32 = 0
    /// The interval's readings that carried an RSSI, their sum and sum of squares (exact: |RSSI| ≤ 128, so
    /// 2³¹ / 128² = 131,072 readings per interval before the squares could overflow).
    @usableFromInline var rawCount: Int32 = 0
    @usableFromInline var rawSum: Int32 = 0
    @usableFromInline var rawSquares: Int32 = 0
    /// The frame's calibration in quarter dB, to notice a change without re-deciding per reading.
    @usableFromInline var frameCalibration = RangingTrack.noFrame
    @usableFromInline var calibration = CalibrationSource.default
    @usableFromInline var proximity = Proximity.unknown
    @usableFromInline var publishedProximity = Proximity.unknown
    @usableFromInline var calibrated = false
    @usableFromInline var unknownAnnounced = false

    @usableFromInline init(identity: BeaconIdentity, rssiAt1m: Double, lastHeard: Double) {
        self.identity = identity
        self.rssiAt1m = rssiAt1m
        self.lastHeard = lastHeard
    }
}

/// The index key: a `BeaconIdentity` folded into one mixed word.
///
/// The dictionary asks for `_rawHashValue(seed:)`; answering it directly skips SipHash's
/// finalisation (about a fifth of a reading's cost). The word is combined with the dictionary's
/// per-instance seed (random per process) before the SplitMix64 finaliser, a bijection, so
/// choosing identities that collide still takes knowing the seed (the flood of random addresses
/// the issue names is also bounded by the capacity and evictions).
@usableFromInline struct RangingKey: Hashable, Sendable {
    @usableFromInline let identity: BeaconIdentity

    @usableFromInline init(_ identity: BeaconIdentity) { self.identity = identity }

    @inlinable var word: UInt64 {
        let m: UInt64 = 0x9E37_79B9_7F4A_7C15
        switch identity {
        case .iBeacon(let u, let major, let minor):
            return u.high &* m ^ u.low ^ (UInt64(major) << 16 | UInt64(minor)) &* 0xBF58_476D_1CE4_E5B9
        case .eddystone(let h, let l, let i):
            return h &* m ^ (UInt64(l) << 48 | i) ^ 1
        case .altBeacon(let h, let mid, let l):
            return h &* m ^ mid ^ UInt64(l) &* 0xBF58_476D_1CE4_E5B9 ^ 2
        case .address(let a):
            return a.rawValue ^ 3 << 56
        }
    }

    @usableFromInline func hash(into hasher: inout Hasher) { hasher.combine(word) }

    @inlinable func _rawHashValue(seed: Int) -> Int {
        // SplitMix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014).
        var z = word ^ UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ z >> 30) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ z >> 27) &* 0x94D0_49BB_1331_11EB
        return Int(bitPattern: UInt(z ^ z >> 31))
    }

    @usableFromInline static func == (a: RangingKey, b: RangingKey) -> Bool { a.identity == b.identity }
}
