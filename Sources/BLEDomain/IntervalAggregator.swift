/// Groups RSSI samples per key (a beacon identity) into publishing intervals, so 5,000 beacons heard
/// ten times a second become 5,000 messages a second at most, not 50,000.
///
/// Pure: samples and the time come in, summaries go out. Memory is bounded: past `capacity` keys,
/// the least recently heard are evicted (in batches, so a flood of random addresses costs amortised
/// O(1) per sample) and counted; keys not heard for `forgetAfter` are dropped at the next flush.
public struct IntervalAggregator<Key: Hashable & Sendable, Info: Sendable>: Sendable {
    public struct Summary: Sendable {
        public var key: Key
        public var info: Info
        public var samples: Int
        /// Mean of the samples that carried an RSSI; nil when none did (RSSI 127, "not available").
        public var meanRSSI: Double?
        public var lastRSSI: Int8?
        public var lastSeen: Duration
    }

    struct Entry: Sendable {
        var info: Info
        var samples = 0
        var rssiSamples = 0
        var rssiSum = 0
        var lastRSSI: Int8?
        var lastSeen: Duration
    }

    public let capacity: Int
    public let forgetAfter: Duration
    var entries: [Key: Entry] = [:]
    /// Keys evicted because `capacity` was reached.
    public private(set) var evictions = 0

    public init(capacity: Int = 20_000, forgetAfter: Duration = .seconds(30)) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.forgetAfter = forgetAfter
    }

    public var trackedCount: Int { entries.count }

    /// Records one sighting. `info` is evaluated only for a key not yet tracked; `update` replaces it.
    public mutating func add(_ key: Key, rssi: Int8?, at now: Duration, info: @autoclosure () -> Info) {
        if entries[key] == nil {
            if entries.count >= capacity { evictLeastRecentlySeen() }
            entries[key] = Entry(info: info(), lastSeen: now)
        }
        entries[key]!.record(rssi: rssi, at: now)
    }

    /// Replaces what is known about a tracked key (its address changed, its name arrived).
    public mutating func update(_ key: Key, info: Info) {
        entries[key]?.info = info
    }

    /// Summaries of every key heard since the last flush, and forgetting of keys silent for `forgetAfter`.
    public mutating func flush(at now: Duration) -> [Summary] {
        var out: [Summary] = []
        out.reserveCapacity(entries.count)
        var stale: [Key] = []
        for (key, e) in entries {
            if e.samples > 0 {
                out.append(Summary(
                    key: key, info: e.info, samples: e.samples,
                    meanRSSI: e.rssiSamples > 0 ? Double(e.rssiSum) / Double(e.rssiSamples) : nil,
                    lastRSSI: e.lastRSSI, lastSeen: e.lastSeen))
            } else if now - e.lastSeen >= forgetAfter {
                stale.append(key)
            }
        }
        for k in stale { entries.removeValue(forKey: k) }
        for i in out.indices { entries[out[i].key]?.resetInterval() }
        return out
    }

    /// Evicts the least recently seen tenth (at least one), so a flood pays for a sort once per
    /// `capacity / 10` new keys rather than a scan per key.
    mutating func evictLeastRecentlySeen() {
        let n = max(1, capacity / 10)
        let victims = entries.sorted { $0.value.lastSeen < $1.value.lastSeen }.prefix(n).map(\.key)
        for k in victims { entries.removeValue(forKey: k) }
        evictions += victims.count
    }
}

extension IntervalAggregator.Entry {
    mutating func record(rssi: Int8?, at now: Duration) {
        samples += 1
        lastSeen = now
        lastRSSI = rssi
        if let rssi {
            rssiSamples += 1
            rssiSum += Int(rssi)
        }
    }

    mutating func resetInterval() {
        samples = 0
        rssiSamples = 0
        rssiSum = 0
    }
}
