import BLESpool
import BLETransport
import Foundation

/// Moves durable readings from the spool to the broker: the only path a reading takes to MQTT.
///
/// libmosquitto would queue without bound while the broker is away, so it is handed at most `window`
/// messages at a time; everything else waits in SQLite. A reading is deleted from the spool only once
/// the broker acknowledged it. When a connection ends, unacknowledged publishes fail, and after the next
/// CONNACK the publisher starts again from the oldest unacknowledged reading: the backlog is replayed in
/// seq order with its original timestamps, and new readings, which have higher seqs, follow behind it.
/// Delivery is at least once; consumers drop duplicates by (gateway, seq). A publish the broker refuses for now holds
/// back only its topic's family (`RefusalHolds`): the rest keeps flowing in seq order.
public final class SpoolPublisher: Sendable {
    public struct Statistics: Sendable, Equatable {
        /// Readings the broker acknowledged.
        public var acknowledged: UInt64 = 0
        /// Readings that can never be delivered as they are, moved to the spool's dead letters (kept for an operator,
        /// counted here, logged): the broker refused them for good (0x90 Topic Name invalid, 0x95 Packet too large,
        /// 0x99 Payload format invalid), libmosquitto refused to send them (larger than the broker's Maximum Packet
        /// Size, an invalid topic), or the broker closed the connection `poisonAfterLosses` times in a row while the
        /// reading was the oldest one it had not acknowledged (how MQTT 3.1.1 brokers refuse).
        public var rejected: UInt64 = 0
        /// Of `rejected`, those set aside because the connection kept ending with them unacknowledged.
        public var poisoned: UInt64 = 0
        /// Publishes the broker refused for now (0x87 Not authorized, 0x97 Quota exceeded, 0x89 Server busy, 0x83,
        /// 0x80 …): the reading stays in the spool and is sent again after a backoff.
        public var refused: UInt64 = 0
        /// The longest-standing refusal in force (a family refused and not acknowledged since), with when it began.
        public var refusal: Refusal?
        /// The topic families held back by refusals now (`RefusalHolds.family`), sorted; every other family flows.
        public var refusedFamilies: [String] = []
        /// Publishes that failed because the connection ended; they are replayed.
        public var replays: UInt64 = 0
        /// Samples whose MQTT 5 expiry had already passed when their turn came (a backlog after an outage): not sent
        /// with a second to live, but counted and removed.
        public var expired: UInt64 = 0
        /// Readings handed to the client and not yet resolved.
        public var inFlight: Int = 0
        public var connected = false
        /// Notices (`Notice`) dropped because nobody read them: the oldest go first once `noticeBuffer` are waiting.
        /// What they told is counted above and kept in the spool's dead letters either way.
        public var noticesDropped: UInt64 = 0
    }

    /// A broker refusing publishes for now: its reason and since when (the publisher's clock, Unix time).
    public struct Refusal: Sendable, Equatable {
        public var reason: MQTTReasonCode
        public var since: Double
    }

    let spool: Spool
    let client: MQTTClient
    let window: Int
    let clock: any BLEClock
    /// After a failed spool read, the next try (a retry delay; nothing else is waited for by time).
    let retryInterval: Duration
    /// What the publisher has to tell its owner, in the order it happened (`Notice`); read by one follower.
    public let notices: AsyncStream<Notice>
    private let noticeSink: AsyncStream<Notice>.Continuation
    /// The gateway's own `<prefix>/<gateway>`, which groups its topics into families (`RefusalHolds.family`).
    let base: String?
    /// The largest payload to send (0: no limit of ours); larger readings are dead letters.
    let maxPayloadBytes: Int
    /// Told each reading the broker acknowledged, by topic and family (the gateway's read-back under MQTT 3.1.1).
    let acknowledgedObserver: (@Sendable (_ topic: String, _ family: String) -> Void)?
    let wake = WakeSignal()
    /// Signalled on every acknowledgement and connection change: `drain` waits on it.
    let progress = WakeSignal()
    var refillThreshold: Int { max(1, window / 4) }
    let state: Locked<State>

    /// What happened that the gateway logs or reports: a reading the broker can never take (kept in the spool's dead
    /// letters), and a family's refusal episode beginning (once per episode) or ending. Rare events: the stream
    /// buffers `noticeBuffer` of them for a busy follower, and counts (`Statistics.noticesDropped`) what a publisher
    /// nobody follows (a benchmark, a test) would otherwise keep without bound.
    public static let noticeBuffer = 256
    public enum Notice: Sendable {
        case rejected(SpooledReading, MQTTError)
        case refusal(RefusalEpisode)
    }

    /// A family held back by a refusal, or let go again.
    public enum RefusalEpisode: Sendable {
        case began(family: String, first: SpooledReading, error: MQTTError)
        /// `expired`: ended because nothing of the family was left to send (its readings expired), not by an
        /// acknowledgement.
        case ended(family: String, expired: Bool)
    }

    struct State: Sendable {
        var stats = Statistics()
        var generation = 0
        var inFlight: Set<UInt64> = []
        /// Read the spool again from after this seq (0: from the oldest): a publish failed for want of a connection,
        /// or a held family's backlog is to follow its acknowledged probe.
        var rewind: UInt64?
        var holds: RefusalHolds
        /// The reading a 3.1.1 broker keeps closing the connection on, if any.
        var poison: PoisonWatch
        /// The client's window was full when a reading was handed over (others share the client): the next refill
        /// waits for an answer, or the retry interval, instead of spinning against it.
        var clientFull = false

        mutating func rewind(to seq: UInt64) { rewind = min(rewind ?? seq, seq) }

        /// The statistics' view of the holds, after each change of them.
        mutating func holdsChanged() {
            stats.refusedFamilies = holds.families
            stats.refusal = holds.oldest.map { Refusal(reason: $0.reason, since: $0.since) }
        }
    }

    /// Hands a notice to the follower; one pushed out of a full buffer is counted here, once.
    private func tell(_ notice: Notice) {
        if case .dropped = noticeSink.yield(notice) { state.withLock { $0.stats.noticesDropped += 1 } }
    }

    /// - Parameters:
    ///   - window: readings handed to the client at once (≤ the client's `maxInFlight`).
    ///   - retryInterval: the wait before reading the spool again after a read failed. Otherwise the publisher waits
    ///     for an event: the spool's committer and every state event call `readingsAvailable()`, acknowledgements
    ///     and connection changes wake it too.
    ///   - base: the gateway's `<prefix>/<gateway>` (`Topics`), by which refusals hold back families of topics.
    ///   - refusalBackoff: the wait before a refused family is tried again, doubling up to `maxRefusalBackoff`.
    ///   - acknowledged: told the topic and family of each reading the broker acknowledged (nil: nobody asks).
    public init(
        spool: Spool, client: MQTTClient, window: Int, clock: any BLEClock,
        retryInterval: Duration = .milliseconds(100),
        maxPayloadBytes: Int = 0, base: String? = nil,
        refusalBackoff: Duration = .seconds(1), maxRefusalBackoff: Duration = .seconds(60), poisonAfterLosses: Int = 5,
        acknowledged: (@Sendable (_ topic: String, _ family: String) -> Void)? = nil
    ) {
        self.base = base
        self.acknowledgedObserver = acknowledged
        self.maxPayloadBytes = maxPayloadBytes
        (notices, noticeSink) = AsyncStream.makeStream(
            of: Notice.self, bufferingPolicy: .bufferingNewest(Self.noticeBuffer))
        self.state = Locked(
            State(
                holds: RefusalHolds(initialBackoff: refusalBackoff, maxBackoff: maxRefusalBackoff),
                poison: PoisonWatch(limit: poisonAfterLosses)))
        precondition(window > 0)
        self.spool = spool
        self.client = client
        self.window = window
        self.clock = clock
        self.retryInterval = retryInterval
    }

    public var statistics: Statistics { state.withLock { $0.stats } }

    /// The client connected (after its CONNACK) or lost its connection (`clientEvent`).
    func connectionChanged(connected: Bool) {
        let (poison, limit) = state.withLock { s -> (SpooledReading?, Int) in
            s.stats.connected = connected
            s.generation += 1
            s.rewind(to: 0)
            s.holds.connectionChanged()
            // On the next CONNACK, judge the connection that ended (PoisonWatch).
            return (connected ? s.poison.connected() : nil, s.poison.limit)
        }
        if let poison {
            // No number to give: MQTT 3.1.1 closes the connection without saying why.
            let e = MQTTError(
                kind: .notAcknowledged, code: 0,
                name: """
                    the broker closed the connection \(limit) times in a row with this reading the oldest \
                    it had not acknowledged
                    """)
            spool.deadLetter(poison.seq, reason: DeadLetterReason(code: e.code, name: e.name), at: clock.unixTime())
            state.withLock {
                $0.stats.rejected += 1
                $0.stats.poisoned += 1
            }
            tell(.rejected(poison, e))
        }
        wake.signal()
        progress.signal()
    }

    /// One of the client's events, as the publisher needs it. Whoever owns the client's event stream (the gateway's
    /// runtime, a test) hands every event here, so the mapping from events to connection changes is written once.
    public func clientEvent(_ event: MQTTEvent) {
        switch event {
        case .connected: connectionChanged(connected: true)
        case .disconnected, .connectionFailed, .connectionRefused: connectionChanged(connected: false)
        case .connecting, .unacknowledged, .backingOff: break
        }
    }

    /// New durable readings exist (the committer committed a batch, or a state event was committed): publish them.
    public func readingsAvailable() { wake.signal() }

    /// Runs until cancelled. Never throws: spool read errors are retried after `retryInterval`.
    public func run() async {
        var cursor: UInt64 = 0
        var generation = -1
        while !Task.isCancelled {
            let (connected, gen, rewind, inFlight, clientFull) = state.withLock { s in
                let r = (s.stats.connected, s.generation, s.rewind, s.inFlight.count, s.clientFull)
                s.rewind = nil
                s.clientFull = false
                return r
            }
            if gen != generation {
                generation = gen
                cursor = 0
            }
            if let rewind { cursor = min(cursor, rewind) }
            guard connected else {
                await wake.wait()  // connectionChanged signals
                continue
            }
            if clientFull {
                // An answer frees room (and signals); the retry interval bounds the wait when others hold the room.
                await wake.wait(upTo: retryInterval, clock: clock)
            }
            // Refused families whose wait is over: read again from their oldest, so each finds its probe.
            if let from = state.withLock({ $0.holds.fallDue(now: clock.now()) }) {
                cursor = min(cursor, max(from, 1) - 1)
            }
            let room = window - inFlight
            var handed = 0
            var readFailed = false
            var readOn = false
            // Refill in batches, not one slot per acknowledgement: a query per ack would cap replay at the rate of
            // SQLite round trips. A quarter of the window free (or an empty window) is worth a query.
            // What is with the broker before the read, not after: a reading acknowledged in between is out of the
            // spool's answer, while one taken after the read would let an acknowledged reading in it go twice.
            let (busy, held) = state.withLock { ($0.inFlight, !$0.holds.isEmpty) }
            if room > 0, room >= refillThreshold || inFlight == 0,
                let batch = Self.read(spool, after: cursor, limit: room, failed: &readFailed)
            {
                for r in batch {
                    if busy.contains(r.seq) {
                        // With the broker already: if its family looks for a probe, this is it.
                        if held {
                            let family = RefusalHolds.family(of: r.reading.topic, base: base)
                            state.withLock { s in
                                // Still with it (the snapshot is older than the read: an answer may have come since).
                                if s.inFlight.contains(r.seq) { s.holds.inFlight(family, seq: r.seq) }
                            }
                        }
                        continue
                    }
                    if Self.hasExpired(r, now: clock.unixTime()) {
                        spool.acknowledge(CollectionOfOne(r.seq))
                        state.withLock { $0.stats.expired += 1 }
                        continue
                    }
                    // No family held (the usual case): no family to work out for each reading.
                    let family = held ? RefusalHolds.family(of: r.reading.topic, base: base) : ""
                    let admitted = state.withLock { s -> Bool in
                        guard !held || s.holds.admit(family, seq: r.seq) == .send else { return false }
                        s.inFlight.insert(r.seq)
                        s.stats.inFlight = s.inFlight.count
                        return true
                    }
                    guard admitted else { continue }  // held back with its family; it stays in the spool
                    handed += 1
                    let message = Self.message(for: r, now: clock.unixTime())
                    if maxPayloadBytes > 0, message.payload.count > maxPayloadBytes {
                        resolved(
                            r,
                            .failure(
                                MQTTError.library(
                                    Int32(MQTTError.payloadSize),
                                    detail:
                                        "\(message.payload.count) bytes; mqtt.max_payload_bytes is \(maxPayloadBytes)"))
                        )
                        continue
                    }
                    // Handed over here, in seq order; only the wait for the ack is concurrent.
                    client.submit(message) { self.resolved(r, $0) }
                }
                if let last = batch.last { cursor = max(cursor, last.seq) }
                if batch.isEmpty {
                    // The end of the spool (`pending` reads past the acknowledged rows not yet deleted, so nothing is
                    // behind): a family that fell due and found no reading has nothing left to refuse.
                    let ended = state.withLock { s -> [String] in
                        let ended = s.holds.endUnprobed()
                        if !ended.isEmpty { s.holdsChanged() }
                        return ended
                    }
                    for family in ended { tell(.refusal(.ended(family: family, expired: true))) }
                } else {
                    // A batch all held back or in flight: read on, to what is behind it (or to the end).
                    readOn = handed == 0
                }
            }
            if handed == 0 && !readOn {
                if readFailed {
                    await wake.wait(upTo: retryInterval, clock: clock)
                } else if let deadline = state.withLock({ $0.holds.nextDeadline }) {
                    await wake.wait(upTo: max(.zero, deadline - clock.now()), clock: clock)
                } else {
                    await wake.wait()
                }
            }
        }
    }

    private static func read(_ spool: Spool, after cursor: UInt64, limit: Int, failed: inout Bool)
        -> [SpooledReading]?
    {
        do { return try spool.pending(after: cursor, limit: limit) } catch {
            failed = true
            return nil
        }
    }

    /// Waits until everything in the spool is acknowledged, the connection is lost, or `timeout` passes — woken by
    /// each acknowledgement, not by a timer. Returns whether the spool was drained.
    public func drain(within timeout: Duration) async -> Bool {
        let deadline = clock.now() + timeout
        while !Task.isCancelled {
            let (connected, inFlight) = state.withLock { ($0.stats.connected, $0.inFlight.count) }
            if spool.statistics.depth == 0 && inFlight == 0 { return true }
            let left = deadline - clock.now()
            guard connected, left > .zero else { return false }
            await progress.wait(upTo: left, clock: clock)
        }
        return false
    }

    func resolved(_ r: SpooledReading, _ result: Result<MQTTPublishID, MQTTError>) {
        switch result {
        case .success:
            spool.acknowledge(CollectionOfOne(r.seq))
            let family = RefusalHolds.family(of: r.reading.topic, base: base)
            acknowledgedObserver?(r.reading.topic, family)
            let ended = state.withLock { s -> Bool in
                s.poison.acknowledged(r.seq)
                guard let hold = s.holds.acknowledged(family) else { return false }
                // The family's backlog follows, from its oldest refused reading.
                s.rewind(to: max(hold.from, 1) - 1)
                s.holdsChanged()
                return true
            }
            finish(r.seq) { $0.acknowledged += 1 }
            if ended { tell(.refusal(.ended(family: family, expired: false))) }
        case .failure(let e)
        where e.kind == .reasonCode && MQTTReasonCode(rawValue: e.code).isLastingForThisMessage
            || e.isLocalRefusalOfThisMessage:
            // Never deliverable as it is; kept, out of the way of the readings behind it.
            let name = e.detail.map { "\(e.name): \($0)" } ?? e.name
            spool.deadLetter(r.seq, reason: DeadLetterReason(code: e.code, name: name), at: clock.unixTime())
            finish(r.seq) { $0.rejected += 1 }
            probeLost(r.seq)
            tell(.rejected(r, e))
        case .failure(let e)
        where e.kind == .reasonCode && MQTTReasonCode(rawValue: e.code).isFailure || e.isQoSNotSupported:
            // Refused for now: kept in the spool, its family held back and tried again after a backoff that doubles
            // while the refusals go on; every other family keeps flowing.
            let family = RefusalHolds.family(of: r.reading.topic, base: base)
            let reason = e.isQoSNotSupported ? MQTTReasonCode.qosNotSupported : MQTTReasonCode(rawValue: e.code)
            let began = state.withLock { s -> Bool in
                s.inFlight.remove(r.seq)
                s.stats.inFlight = s.inFlight.count
                s.stats.refused += 1
                let began = s.holds.refused(
                    family, seq: r.seq, reason: reason, now: clock.now(), since: clock.unixTime())
                s.holdsChanged()
                return began
            }
            if began { tell(.refusal(.began(family: family, first: r, error: e))) }
        case .failure(let e):
            // Not acknowledged, not connected, window full: it stays in the spool and is replayed.
            state.withLock {
                if e.kind == .notAcknowledged { $0.poison.lost(r) }
                $0.inFlight.remove(r.seq)
                $0.stats.inFlight = $0.inFlight.count
                $0.stats.replays += 1
                $0.rewind(to: 0)
                if e.kind == .inFlightWindowFull { $0.clientFull = true }
                // A probe that failed so is no verdict: its family looks for a probe again.
                _ = $0.holds.probeLost(r.seq)
            }
        }
        wake.signal()
        progress.signal()
    }

    /// A probe left the spool (a dead letter) before a verdict: its family looks for a probe again, from its oldest.
    private func probeLost(_ seq: UInt64) {
        state.withLock { s in
            guard let from = s.holds.probeLost(seq) else { return }
            s.rewind(to: max(from, 1) - 1)
        }
    }

    private func finish(_ seq: UInt64, _ count: (inout Statistics) -> Void) {
        state.withLock {
            $0.inFlight.remove(seq)
            $0.stats.inFlight = $0.inFlight.count
            count(&$0.stats)
        }
    }

    /// A reading with an expiry whose time is up, judged only when its clock was synchronised (a clock jump must not
    /// mass-expire a backlog).
    static func hasExpired(_ r: SpooledReading, now: Double) -> Bool {
        guard let e = r.reading.expiry, r.reading.clockSynchronized else { return false }
        return now - r.reading.ts >= e
    }

    /// The MQTT message for a spooled reading: the envelope rendered around its body, and for readings with an
    /// expiry the MQTT 5 message expiry interval — what remains of it when both clocks can be trusted, so a
    /// replayed backlog does not live longer than it should; the whole interval when the reading's clock was not
    /// synchronised (a jump must not mass-expire a backlog).
    static func message(for r: SpooledReading, now: Double) -> MQTTMessage {
        let reading = r.reading
        var expiry: UInt32?
        if let e = reading.expiry {
            var remaining = e
            if reading.clockSynchronized {
                let age = now - reading.ts
                if age > 0 { remaining = e - age }
            }
            expiry = UInt32(clamping: Int(max(1, remaining.rounded(.up))))
        }
        return MQTTMessage(
            topic: reading.topic,
            payload: PayloadEnvelope.render(
                run: reading.run, seq: r.seq, ts: reading.ts, clockSynced: reading.clockSynchronized, body: reading.body
            ),
            qos: MQTTQoS(rawValue: Int(reading.qos)) ?? .atLeastOnce, retain: reading.retain,
            messageExpiryInterval: expiry)
    }
}
