/// Which topic families the broker refuses for now, and when each is tried again: a pure state machine (no I/O, no
/// clock of its own) that `SpoolPublisher` asks before handing each reading over.
///
/// A broker refuses by topic (an ACL denies a pattern, MQTT 5 answers the PUBLISH with 0x87 Not authorized), so a
/// refusal holds back its topic's family only: the readings of that family stay in the spool, in order, while every
/// other family keeps flowing. Holding the whole window instead let one denied discovery document stop every health
/// report and reading behind it. After a backoff one reading of the family, its oldest, goes as a probe: acknowledged,
/// the hold ends and the family's backlog follows; refused again, the backoff doubles up to its bound.
public struct RefusalHolds: Sendable, Equatable {
    /// Where one family's hold stands.
    public enum Phase: Sendable, Equatable {
        /// Nothing of the family is sent before `until` (the publisher's clock).
        case waiting(until: Duration)
        /// The wait is over and the spool is being read again from `from`: the family's first reading found is the
        /// probe. A family with no reading left there (expired, or gone) has nothing left to refuse.
        case due
        /// The probe is with the broker.
        case probing(seq: UInt64)
    }

    public struct Hold: Sendable, Equatable {
        /// What the broker said first, and when (Unix time): what the health and status topics show.
        public var reason: MQTTReasonCode
        public var since: Double
        /// The oldest reading of the family that was refused: reading the spool again from here finds the backlog.
        public var from: UInt64
        public var backoff: Duration
        public var phase: Phase
    }

    /// What the publisher does with a reading of a family.
    public enum Admission: Sendable, Equatable {
        case send
        /// The family's hold is waiting, or its probe is out: the reading stays in the spool for now.
        case hold
    }

    public let initialBackoff: Duration
    public let maxBackoff: Duration
    public private(set) var holds: [String: Hold] = [:]
    /// Per family, where its last hold began (`from`) when an acknowledged probe ended it: the family's backlog is
    /// read again from there, and until that read has sent it, a new refusal of the family must not begin its hold
    /// any later, or the readings between the two would be stranded behind the publisher's cursor.
    public private(set) var ended: [String: UInt64] = [:]

    public init(initialBackoff: Duration, maxBackoff: Duration) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = max(initialBackoff, maxBackoff)
    }

    /// Whether a reading of `family` may go now. The first reading asked for in a due family becomes its probe.
    public mutating func admit(_ family: String, seq: UInt64) -> Admission {
        guard var h = holds[family] else { return .send }
        switch h.phase {
        case .waiting, .probing: return .hold
        case .due:
            h.phase = .probing(seq: seq)
            holds[family] = h
            return .send
        }
    }

    /// The broker refused a reading of `family`. Returns true when this begins the family's hold (once per episode,
    /// for the log and the status topic).
    public mutating func refused(
        _ family: String, seq: UInt64, reason: MQTTReasonCode, now: Duration, since unixTime: Double
    ) -> Bool {
        guard var h = holds[family] else {
            let from = min(seq, ended.removeValue(forKey: family) ?? seq)
            holds[family] = Hold(
                reason: reason, since: unixTime, from: from, backoff: initialBackoff,
                phase: .waiting(until: now + initialBackoff))
            return true
        }
        h.from = min(h.from, seq)
        switch h.phase {
        case .probing(seq), .due:
            // The probe's answer (or, while due, an earlier reading's: the answer a probe would have had).
            h.backoff = min(maxBackoff, h.backoff * 2)
            h.phase = .waiting(until: now + h.backoff)
        case .waiting, .probing:
            // Readings that were in flight when the hold began, answered now: the wait already set stands.
            break
        }
        holds[family] = h
        return false
    }

    /// The broker acknowledged a reading of `family`: a hold on it ends. Returns the ended hold, whose `from` is where
    /// the family's backlog begins.
    public mutating func acknowledged(_ family: String) -> Hold? {
        guard let hold = holds.removeValue(forKey: family) else { return nil }
        ended[family] = min(ended[family] ?? hold.from, hold.from)
        return hold
    }

    /// A reading of `family` already with the broker was met while reading the spool for a due family's probe: that
    /// reading is the probe, and its answer decides (without this, the family found nothing to probe with and its hold
    /// ended as if its readings had expired).
    public mutating func inFlight(_ family: String, seq: UInt64) {
        guard holds[family]?.phase == .due else { return }
        holds[family]?.phase = .probing(seq: seq)
    }

    /// A probe ended without the broker's verdict (the connection ended, the client's window was full) or left the
    /// spool (a dead letter): its family is due again, so the next reading of it found is the probe. Returns the seq to
    /// read the spool again from, or nil when `seq` probed nothing.
    public mutating func probeLost(_ seq: UInt64) -> UInt64? {
        guard let (family, h) = holds.first(where: { $0.value.phase == .probing(seq: seq) }) else { return nil }
        holds[family]?.phase = .due
        return h.from
    }

    /// The connection ended or began: no probe is with the broker any more, and the publisher reads from its oldest
    /// reading again, which finds every family's backlog.
    public mutating func connectionChanged() {
        for (family, h) in holds where h.phase != .due {
            if case .probing = h.phase { holds[family]?.phase = .due }
        }
        ended = [:]
    }

    /// No family is held: the publisher need not work out the family of each reading.
    public var isEmpty: Bool { holds.isEmpty }

    /// The holds whose wait is over at `now` become due. Returns the oldest seq to read the spool again from (the
    /// smallest `from` among them), or nil when none fell due.
    public mutating func fallDue(now: Duration) -> UInt64? {
        var from: UInt64?
        for (family, h) in holds {
            guard case .waiting(let until) = h.phase, now >= until else { continue }
            holds[family]?.phase = .due
            from = min(from ?? h.from, h.from)
        }
        return from
    }

    /// The spool was read to its end: a family still due found no reading to probe with, so nothing of it is left to
    /// refuse (its readings expired, or were removed). Those holds end; returns their families.
    public mutating func endUnprobed() -> [String] {
        let ended = holds.filter { $0.value.phase == .due }.map(\.key).sorted()
        for f in ended { holds[f] = nil }
        return ended
    }

    /// When the next waiting hold falls due (nil: none waits).
    public var nextDeadline: Duration? {
        holds.values.compactMap { h -> Duration? in
            if case .waiting(let until) = h.phase { return until }
            return nil
        }.min()
    }

    /// The families held, sorted (for the health topic).
    public var families: [String] { holds.keys.sorted() }

    /// The longest-standing hold (for the status topic's `publish_refused`).
    public var oldest: Hold? { holds.values.min { ($0.since, $0.from) < ($1.since, $1.from) } }

    /// The family of `topic`: under the gateway's own `base` (`<prefix>/<gateway>`), the base and the level after it
    /// (`blegateway/gw-1/beacons`), which is how the schema and an ACL group them; elsewhere (Home Assistant's
    /// discovery, the fleet's claims) its first two levels (`homeassistant/device`).
    public static func family(of topic: String, base: String?) -> String {
        if let base, topic.hasPrefix(base), topic.utf8.count > base.utf8.count,
            topic.utf8[topic.utf8.index(topic.utf8.startIndex, offsetBy: base.utf8.count)] == UInt8(ascii: "/")
        {
            let rest = topic.utf8.dropFirst(base.utf8.count + 1)
            let level = rest.prefix { $0 != UInt8(ascii: "/") }
            return base + "/" + String(decoding: level, as: UTF8.self)
        }
        let levels = topic.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        return levels.prefix(2).joined(separator: "/")
    }
}
