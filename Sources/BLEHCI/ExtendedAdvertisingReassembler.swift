import BLETransport

/// Joins the fragments of extended advertising data (Core v5.4, Vol 4, Part E, §7.7.65.13).
///
/// A controller delivers data longer than one event in several LE Extended Advertising Reports with
/// Data_Status 0b01 "incomplete, more data to come", closing with 0b00 "complete" or 0b10
/// "incomplete, data truncated, no more to come". Fragments of one advertisement share the advertiser's
/// address, address type and Advertising SID, which is the key here.
///
/// Memory is bounded: at most `maxPendingEntries` advertisements and `maxPendingBytes` bytes wait for
/// their next fragment; the oldest is evicted (and counted) to make room, and so is any entry whose
/// next fragment does not arrive within `maxAge` or which grows past the 1650-octet maximum
/// (Vol 6, Part B, §2.3.4.9: AdvData of a chain is at most 1650 octets).
///
/// A struct that takes fragments and returns results; it does no I/O and reads no clock (the caller passes `now`).
public struct ExtendedAdvertisingReassembler: Sendable {
    public struct Configuration: Sendable {
        /// Advertisements that may wait for more fragments at once.
        public var maxPendingEntries: Int = 64
        /// Bytes those advertisements may hold together.
        public var maxPendingBytes: Int = 32 * 1024
        /// How long an advertisement may wait for its next fragment.
        public var maxAge: Duration = .seconds(2)
        /// Data longer than this is not a valid chain; the entry is dropped.
        public var maxDataLength: Int = 1650
        public init() {}
    }

    /// What happened to the fragments so far; for metrics.
    public struct Counters: Sendable, Hashable {
        /// Advertisements delivered after joining two or more fragments.
        public var reassembled = 0
        /// Advertisements delivered with Data_Status "truncated" (joined or not).
        public var truncated = 0
        /// Pending advertisements dropped to stay within the entry or byte cap.
        public var evicted = 0
        /// Pending advertisements dropped because their next fragment came too late.
        public var expired = 0
        /// Pending advertisements dropped for growing past `maxDataLength`.
        public var oversized = 0
        public init() {}
    }

    /// One advertisement ready for decoding. `report.data` is the caller's slice when the advertisement
    /// came in one piece (no copy), or a slice of a new array when it was joined.
    public struct Assembled: Sendable {
        public var report: LEAdvertisingReport
        /// The controller said the data was cut short; what there is is all there will be.
        public var isTruncated: Bool
        public var fragments: Int
    }

    struct Key: Hashable {
        var address: BDAddress
        var addressType: LEAddressType
        var sid: UInt8
    }

    struct Pending {
        var data: [UInt8]
        var fragments: Int
        var firstSeen: Duration
        var lastSeen: Duration
    }

    public var configuration: Configuration
    public private(set) var counters = Counters()
    var pending: [Key: Pending] = [:]
    public private(set) var pendingBytes = 0
    /// No pending entry was last seen before this (a lower bound), so `expire` scans only when one may be stale.
    var earliestLastSeen: Duration = .zero

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var pendingEntries: Int { pending.count }

    /// Takes one report. Returns the advertisement when it is complete (or truncated), nil while
    /// fragments are still expected or when the fragment was dropped.
    public mutating func accept(_ report: LEAdvertisingReport, now: Duration) -> Assembled? {
        // Legacy reports, and extended reports of legacy PDUs (event type bit 4), are never fragmented.
        guard report.isExtended, report.eventType & 0x0010 == 0 else {
            return Assembled(report: report, isTruncated: false, fragments: 1)
        }
        if !pending.isEmpty { expire(now: now) }
        let key = Key(address: report.address, addressType: report.addressType, sid: report.advertisingSID)
        let status = report.dataStatus
        guard var entry = pending.removeValue(forKey: key) else {
            if status == .incomplete {
                store(key, Pending(data: Array(report.data), fragments: 1, firstSeen: now, lastSeen: now))
                return nil
            }
            if status == .truncated { counters.truncated += 1 }
            return Assembled(report: report, isTruncated: status != .complete, fragments: 1)
        }
        pendingBytes -= entry.data.count
        guard entry.data.count + report.data.count <= configuration.maxDataLength else {
            counters.oversized += 1
            return nil
        }
        entry.data.append(contentsOf: report.data)
        entry.fragments += 1
        entry.lastSeen = now
        if status == .incomplete {
            store(key, entry)
            return nil
        }
        var joined = report
        joined.data = entry.data[...]
        joined.dataStatus = status == .complete ? .complete : .truncated
        counters.reassembled += 1
        if status != .complete { counters.truncated += 1 }
        return Assembled(report: joined, isTruncated: status != .complete, fragments: entry.fragments)
    }

    /// Drops every pending advertisement (scanning stopped: fragments of old chains must not join new ones).
    public mutating func reset() {
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
    }

    mutating func store(_ key: Key, _ entry: Pending) {
        if entry.data.count > configuration.maxDataLength {
            counters.oversized += 1
            return
        }
        while !pending.isEmpty
            && (pending.count >= configuration.maxPendingEntries
                || pendingBytes + entry.data.count > configuration.maxPendingBytes)
        {
            // Linear in the (small, capped) number of entries, and only when full.
            let oldest = pending.min { $0.value.lastSeen < $1.value.lastSeen }!.key
            pendingBytes -= pending.removeValue(forKey: oldest)!.data.count
            counters.evicted += 1
        }
        guard entry.data.count <= configuration.maxPendingBytes, configuration.maxPendingEntries > 0 else {
            counters.evicted += 1
            return
        }
        earliestLastSeen = pending.isEmpty ? entry.lastSeen : min(earliestLastSeen, entry.lastSeen)
        pending[key] = entry
        pendingBytes += entry.data.count
    }

    mutating func expire(now: Duration) {
        let limit = configuration.maxAge
        guard now - earliestLastSeen > limit else { return }
        let stale = pending.filter { now - $0.value.lastSeen > limit }
        for (k, v) in stale {
            pending.removeValue(forKey: k)
            pendingBytes -= v.data.count
            counters.expired += 1
        }
        earliestLastSeen = pending.values.map(\.lastSeen).min() ?? now
    }
}
