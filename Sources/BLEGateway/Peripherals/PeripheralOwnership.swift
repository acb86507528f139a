import BLEHCI
import BLETransport

/// One gateway per peripheral, agreed through the broker alone (docs/PERIPHERALS.md, "One owner per peripheral").
///
/// Each configured address has one retained claim topic, `<prefix>/fleet/peripherals/<address>/owner`: the last
/// claim written there is the owner, as long as its gateway's retained status says online and the claim's lease has
/// not run out (the owner renews it). Every gateway sees the claims in the broker's one order, so the last word is
/// the same for all of them. A gateway claims what no valid claim holds and it hears; it waits `settle_s` for its own
/// claim to come back (another written after it wins), then connects. A standby gateway takes over only when it hears
/// the device better than the owner's claim says, by `margin_db`, for `dwell_s`; the owner then yields, and the new
/// one connects once the lease on the displaced owner's last claim has run out (it may be cut off, unable to see the
/// claim, and hold its link until its fence).
///
/// An owner fences itself: each claim it writes carries a serial, and it keeps its links only while the broker has
/// echoed one of them within `fence_s` (a fraction of the lease). Cut off from the broker (a network partition the
/// client notices only at its keepalive, or never), it lets its devices go before any other gateway's lease on its
/// last claim runs out, so two links to one device never exist at once; a blip shorter than that changes nothing, its
/// readings waiting in the spool. Each claim also carries the device's epoch: a gateway claiming a device it does not
/// own writes one more than the highest it has seen, a renewal keeps its own, and a claim with a lower epoch than one
/// already seen is stale and ignored: the renewals a cut-off owner wrote before it fenced, delivered when its network
/// comes back, take nothing back from the gateway that took over. For the same reason a gateway's last will does not
/// void its claims at once (the
/// cut-off owner may still hold the link): they stand for their lease. Only the gateway's own offline status, written
/// after it has ended its links, frees its devices at once. Pure: events and the clock in, actions out; the
/// coordinator does the I/O.
public struct PeripheralOwnership: Sendable {
    public struct Settings: Sendable, Equatable {
        public init() {}
        /// A claim not renewed for this long is void.
        public var leaseS = 30.0
        /// The owner writes its claim again this often (with its current RSSI).
        public var renewS = 10.0
        /// A standby gateway must hear the device this much better than the owner…
        public var marginDB = 8.0
        /// …for this long before it takes over.
        public var dwellS = 10.0
        /// A new claim waits this long for a later one before connecting (the broker's order decides).
        public var settleS = 2.0
        /// An owner whose claims the broker has not echoed for this fraction of the lease lets go: before the others'
        /// leases on its last echoed claim run out (they received it when it did), with room for their clocks and
        /// the broker's delivery to differ. Renewals (every `renew_s`) must come well inside it.
        public var fenceFraction = 0.75
        public var fenceS: Double { leaseS * fenceFraction }
        /// What this gateway heard longer ago than this does not count.
        public var heardWithinS = 30.0
        /// After connecting to the broker, retained claims and statuses arrive first: nothing is claimed before.
        public var startupS = 3.0
        /// A free device is claimed after a wait that grows as this gateway hears it worse: this many seconds per dB
        /// below −40 dBm (−60 dBm: 2 s; −90 dBm: 5 s), so the gateway that hears it best claims first.
        public var claimDelayPerDB = 0.1

        func claimDelay(_ rssi: Double) -> Double { max(0, -40 - rssi) * claimDelayPerDB }
    }

    /// A claim as read from the broker.
    public struct Claim: Sendable, Equatable {
        public var gateway: String
        /// The writer's serial for this claim (older gateways send none): this gateway's own claim coming back with
        /// the serial it last wrote is the broker's echo, which keeps it owner; a retained copy of an older one is not.
        public var serial: UInt64?
        /// The device's ownership epoch (older gateways send none): one more for each change of owner.
        public var epoch: UInt64?
        /// The owner's RSSI to the device (filtered); nil when it no longer hears it.
        public var rssi: Double?
        public var leaseS: Double
        /// This gateway's clock when the claim arrived (a lease is timed here, immune to other gateways' clocks).
        public var receivedAt: Double

        public init(
            gateway: String, rssi: Double?, leaseS: Double, receivedAt: Double, serial: UInt64? = nil,
            epoch: UInt64? = nil
        ) {
            self.gateway = gateway
            self.serial = serial
            self.epoch = epoch
            self.rssi = rssi
            self.leaseS = leaseS
            self.receivedAt = receivedAt
        }
    }

    public enum State: Sendable, Equatable {
        /// Neither this gateway's nor another's.
        case idle
        /// Another gateway owns it.
        case standby(owner: String)
        /// This gateway's claim is written; waiting `settle_s` for a later one. `displacing`: taken by the margin from
        /// an owner whose lease on its last claim ends then (it is not connected before).
        case claiming(since: Double, displacing: Double?)
        /// This gateway's claim stands, taken by the margin from an owner that may be cut off: unable to see the claim
        /// and yield, it keeps its link until its fence, which falls before its lease on its last claim runs out at
        /// `connectAt`. Renewed (`renewedAt`, `echoedAt`) and fenced like an owner's; connected only then.
        case displacing(connectAt: Double, renewedAt: Double, echoedAt: Double)
        /// This gateway owns it (and keeps it connected): its claim was last written at `renewedAt` and last came
        /// back from the broker at `echoedAt`.
        case owner(since: Double, renewedAt: Double, echoedAt: Double)
    }

    public enum Action: Sendable, Equatable {
        /// Write this gateway's claim (retained), with its RSSI to the device, the claim's serial and the epoch.
        case claim(BDAddress, rssi: Double?, serial: UInt64, epoch: UInt64)
        /// Clear this gateway's claim (an empty retained message).
        case release(BDAddress)
        /// Keep it connected.
        case connect(BDAddress)
        /// Let it go (disconnect if connected) and report `standby`, naming the owner.
        case standby(BDAddress, owner: String)
        /// Let it go: the broker has echoed none of this gateway's claims for `fence_s`, so it cannot know that its
        /// claim still stands, and another gateway may take the device once the lease runs out.
        case letGo(BDAddress)
    }

    public struct Counters: Sendable, Equatable {
        /// Claims naming something that is not an online gateway of this fleet: ignored.
        public var foreignClaims = 0
        public var takeovers = 0
        public var yields = 0
        /// Devices let go because the broker echoed no claim for `fence_s`.
        public var fences = 0
        /// Claims ignored for an epoch lower than one already seen (a cut-off owner's late renewals).
        public var staleClaims = 0
    }

    struct Entry: Sendable {
        /// What a decision changes: compared to know when a device's decisions have come to rest.
        struct Decided: Equatable {
            var state: State
            var betterSince: Double?
            var freeSince: Double?
        }
        var decisionState: Decided { Decided(state: state, betterSince: betterSince, freeSince: freeSince) }

        var state = State.idle
        var rssi: Double?
        var heardAt = -Double.infinity
        /// The newest claim on the topic (ours included); nil when cleared.
        var claim: Claim?
        /// Since when this gateway has heard the device better than the owner by the margin.
        var betterSince: Double?
        /// Since when the device has been free for this gateway to claim (no valid claim, heard, ready).
        var freeSince: Double?
        /// A claim by a gateway not (yet) seen online: retained messages come in no set order when subscribing, so
        /// it counts if that gateway's online status follows (and no newer claim came meanwhile).
        var unconfirmed: Claim?
        /// The serial of this gateway's last claim on the device while the broker has not echoed it.
        var unechoed: UInt64?
        /// The highest epoch seen on the device's claims.
        var epoch: UInt64 = 0
    }

    /// What a gateway's retained status says of it.
    public enum Presence: Sendable, Equatable {
        case online
        /// Its own offline status: it ended its links before writing it, so its claims are void at once.
        case stopped
        /// Its last will, sent by the broker: it may be cut off and still hold its links until it fences itself, so
        /// its claims stand for their lease.
        case lost
    }

    public let me: String
    public let settings: Settings
    var entries: [BDAddress: Entry]
    /// What each gateway's retained status says (a gateway never heard of is absent). A claim counts for its lease
    /// when its writer is online or lost (its last will came: cut off or dead), not when it stopped.
    var presence: [String: Presence] = [:]
    /// The next claim's serial (the coordinator starts it at random, so a restarted gateway does not take its
    /// previous run's retained claim for an echo).
    var nextSerial: UInt64
    var broker = Broker.away

    /// The broker as this gateway knows it.
    enum Broker: Equatable {
        case away
        /// Connected; nothing is claimed before `readyAt`, when the retained claims and statuses have had time.
        case connected(readyAt: Double)
        /// Connected as far as the client knows, but a fence fell: nothing came back from the broker for `fence_s`.
        /// Nothing is claimed until a message arrives again (then as after connecting): a claim written into a
        /// partition would reach the others after they took over, with the same epoch as theirs, and win.
        case unanswered
    }

    var readyAt: Double? {
        if case .connected(let r) = broker { return r }
        return nil
    }

    /// A message from the broker: one that follows a fence says the broker reaches this gateway again.
    mutating func heardFromBroker(now: Double) {
        if broker == .unanswered { broker = .connected(readyAt: now + settings.startupS) }
    }
    var adapterUp = false
    public private(set) var counters = Counters()

    public init(gateway: String, addresses: [BDAddress], settings: Settings = Settings(), firstSerial: UInt64 = 1) {
        me = gateway
        self.settings = settings
        nextSerial = firstSerial
        entries = Dictionary(addresses.map { ($0, Entry()) }, uniquingKeysWith: { a, _ in a })
    }

    public func state(of address: BDAddress) -> State? { entries[address]?.state }
    public var addresses: [BDAddress] { Array(entries.keys) }

    // MARK: Events

    /// The device heard: an advertisement's RSSI, or the link's (HCI Read RSSI). Returns whether a decision may
    /// now come sooner than `nextDeadline` said: the device is heard again after a silence, this gateway became the
    /// better hearer of a device another owns (or stopped being it), or a free device's claim delay is running
    /// (it follows the RSSI). Otherwise the RSSI only goes into the next claim: no one need wake for it.
    @discardableResult
    public mutating func heard(_ address: BDAddress, rssi: Double, now: Double) -> Bool {
        guard var e = entries[address] else { return false }
        let wasHeard = heardRecently(e, now: now)
        let wasBetter = better(e, now: now)
        // Smoothed over a few readings: one strong packet is not a better gateway.
        e.rssi = e.rssi.map { $0 + 0.3 * (rssi - $0) } ?? rssi
        e.heardAt = now
        entries[address] = e
        return !wasHeard || better(e, now: now) != wasBetter || e.freeSince != nil
    }

    /// Standing by for another owner and hearing the device by the margin better than it does.
    func better(_ e: Entry, now: Double) -> Bool {
        guard case .standby = e.state, let other = valid(e.claim, now: now), other.gateway != me,
            presence[other.gateway] != .lost, heardRecently(e, now: now), let mine = e.rssi
        else { return false }
        return mine >= (other.rssi ?? -.infinity) + settings.marginDB
    }

    /// The claim topic's retained or live message: a claim, or nil when cleared; `retained` when the broker handed it
    /// over as the topic's retained message (at subscribing), not as it was written. Returns whether it was taken
    /// (false: written by something that is not a gateway of this fleet, and ignored).
    @discardableResult
    public mutating func claimed(_ address: BDAddress, _ claim: Claim?, now: Double, retained: Bool = false) -> Bool {
        guard entries[address] != nil else { return true }
        heardFromBroker(now: now)
        if let epoch = claim?.epoch, let held = valid(entries[address]!.claim, now: now), let heldEpoch = held.epoch,
            epoch < heldEpoch
        {
            // Written before the claim that holds the device now, delivered after it (its writer was cut off): not
            // the last word. (Against a lapsed or cleared claim any epoch counts: a gateway that never saw the higher
            // one may claim a free device.)
            counters.staleClaims += 1
            return true
        }
        // A gateway whose last will came is still of this fleet: it may be cut off and still hold its links.
        if let c = claim, c.gateway != me, !isOfThisFleet(c.gateway) {
            counters.foreignClaims += 1
            entries[address]!.unconfirmed = c
            return false
        }
        // The claim this one replaces: another gateway's that still stood, which its writer may still act on (cut off,
        // it keeps its link until its fence, before this claim's lease ends).
        let replaced = valid(entries[address]!.claim, now: now).flatMap { $0.gateway == me ? nil : $0 }
        entries[address]!.claim = claim
        entries[address]!.unconfirmed = nil
        if let c = claim, c.gateway != me, case .claiming(let since, let until?) = entries[address]!.state {
            // The owner we are displacing renewed before our claim reached the broker (ours has not come back): its
            // fence runs from this renewal, so the connection waits for this lease.
            entries[address]!.state = .claiming(since: since, displacing: max(until, c.receivedAt + c.leaseS))
        }
        if let epoch = claim?.epoch { entries[address]!.epoch = max(entries[address]!.epoch, epoch) }
        if let c = claim, c.gateway == me, !retained, let serial = c.serial, serial == entries[address]!.unechoed {
            // The broker's echo of our latest claim: it stands, as of now, for every gateway that follows the topic.
            // (A retained copy handed over at a reconnection is not: the others timed their lease from its writing.)
            entries[address]!.unechoed = nil
            switch entries[address]!.state {
            case .owner(let since, let renewedAt, _):
                entries[address]!.state = .owner(since: since, renewedAt: renewedAt, echoedAt: now)
            case .displacing(let connectAt, let renewedAt, _):
                entries[address]!.state = .displacing(connectAt: connectAt, renewedAt: renewedAt, echoedAt: now)
            case .idle, .standby:
                // Written into a partition and delivered late (or its echo came after the settle wait): it is the last
                // word now, and the others yield to it. Taken up after the settle wait rather than leaving the device
                // without an owner for a lease, but connected only once the claim it replaced has lapsed: that
                // claim's writer may be cut off and keep its link until its fence.
                entries[address]!.state = .claiming(
                    since: now, displacing: replaced.map { $0.receivedAt + $0.leaseS })
            case .claiming:
                break
            }
        }
        return true
    }

    /// Written by a gateway whose status says online, or whose last will came.
    func isOfThisFleet(_ gateway: String) -> Bool {
        switch presence[gateway] {
        case .online?, .lost?: true
        case .stopped?, nil: false
        }
    }

    /// A gateway's retained status.
    public mutating func status(of gateway: String, _ presence: Presence, now: Double) {
        heardFromBroker(now: now)
        self.presence[gateway] = presence
        guard presence != .stopped else { return }
        for (address, e) in entries where e.unconfirmed?.gateway == gateway {
            // Its claim came before its status (online, or its last will): it was a gateway of this fleet after all.
            entries[address]!.claim = e.unconfirmed
            entries[address]!.unconfirmed = nil
            counters.foreignClaims -= 1
        }
    }

    /// Connected to the broker: retained claims and statuses come first, so claiming waits `startup_s`. An owner
    /// renews its claims at once, so that their echo keeps it owner.
    public mutating func brokerConnected(now: Double) {
        if readyAt == nil { broker = .connected(readyAt: now + settings.startupS) }
        for (address, e) in entries {
            switch e.state {
            case .owner(let since, _, let echoedAt):
                entries[address]!.state = .owner(since: since, renewedAt: -.infinity, echoedAt: echoedAt)
            case .displacing(let connectAt, _, let echoedAt):
                entries[address]!.state = .displacing(connectAt: connectAt, renewedAt: -.infinity, echoedAt: echoedAt)
            case .idle, .standby, .claiming:
                break
            }
        }
    }

    /// The broker connection is gone. Owned devices stay connected (their readings wait in the spool) until the
    /// fence: a blip shorter than it changes nothing. A claim not yet settled is dropped: nothing was connected.
    public mutating func brokerLost(now: Double) {
        broker = .away
        for (address, e) in entries {
            if case .claiming = e.state { entries[address]!.state = .idle }
        }
    }

    /// The adapter that makes the links came up or went away. Going away releases everything owned: another
    /// gateway takes over at once rather than after the lease.
    public mutating func adapter(up: Bool, now: Double) -> [Action] {
        adapterUp = up
        guard !up else { return [] }
        var out: [Action] = []
        for (address, e) in entries {
            switch e.state {
            case .owner, .claiming, .displacing:
                entries[address]!.state = .idle
                if e.claim?.gateway == me { entries[address]!.claim = nil }
                out.append(.release(address))
            case .idle, .standby:
                break
            }
        }
        return out
    }

    /// The next moment after `now` at which `tick` could decide something with nothing heard meanwhile: the start-up
    /// wait ending, a claim's lease running out, a device's hearing window closing, a claim delay, dwell or settle
    /// ending, a renewal coming due. Nil: only an event can change anything. The coordinator sleeps until then or
    /// until an event; every event but an RSSI that changes nothing (`heard`) wakes it.
    public func nextDeadline(after now: Double) -> Double? {
        var times: [Double] = []
        if adapterUp, let r = readyAt { times.append(r) }
        for e in entries.values {
            if let c = e.claim { times.append(c.receivedAt + c.leaseS) }
            times.append(e.heardAt + settings.heardWithinS)
            if let free = e.freeSince, let mine = heardRecently(e, now: now) ? e.rssi : nil {
                times.append(free + settings.claimDelay(mine))
            }
            if let b = e.betterSince { times.append(b + settings.dwellS) }
            switch e.state {
            case .claiming(let since, _): times.append(since + settings.settleS)
            case .owner(_, let renewedAt, let echoedAt):
                times.append(renewedAt + settings.renewS)
                times.append(echoedAt + settings.fenceS)
            case .displacing(let connectAt, let renewedAt, let echoedAt):
                times.append(connectAt)
                times.append(renewedAt + settings.renewS)
                times.append(echoedAt + settings.fenceS)
            case .idle, .standby: break
            }
        }
        // Only what is still ahead: a moment already past was decided at the tick that computed this. Each moment is
        // the same sum `decide` compares `now` with, so a deadline and its decision agree to the last bit.
        return times.filter { $0 > now }.min()
    }

    /// Decides every device at `now`: at the deadlines `nextDeadline` gives and after events.
    public mutating func tick(now: Double) -> [Action] {
        var out: [Action] = []
        for address in entries.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            // A decision can leave the next one due at once (a claim whose echo never came leaves the device free,
            // its claim delay to start): decided again until it rests, so no tick has to come "next time". Each
            // round either rests or moves a state on; four are more than any chain of them.
            for _ in 0..<4 {
                let before = entries[address]!.decisionState
                out += decide(address, now: now)
                if entries[address]!.decisionState == before { break }
            }
        }
        return out
    }

    // MARK: Deciding

    func valid(_ c: Claim?, now: Double) -> Claim? {
        // Valid for its lease and not an instant more, so that the moment it lapses is a deadline (`nextDeadline`).
        guard let c, now < c.receivedAt + c.leaseS,
            c.gateway == me || isOfThisFleet(c.gateway)
        else { return nil }
        return c
    }

    func heardRecently(_ e: Entry, now: Double) -> Bool { now < e.heardAt + settings.heardWithinS }

    mutating func decide(_ address: BDAddress, now: Double) -> [Action] {
        var e = entries[address]!
        defer { entries[address] = e }
        let ready = adapterUp && (readyAt.map { now >= $0 } ?? false)
        let current = valid(e.claim, now: now)
        let other = current.flatMap { $0.gateway == me ? nil : $0 }
        let myRSSI = heardRecently(e, now: now) ? e.rssi : nil

        func claim(displacing: Claim? = nil) -> [Action] {
            e.state = .claiming(since: now, displacing: displacing.map { $0.receivedAt + $0.leaseS })
            e.betterSince = nil
            e.freeSince = nil
            // A new owner: one epoch past every claim received, so whatever an earlier owner still has in flight is
            // stale. Not counted up locally: claims that never reached the broker do not raise it.
            return [write(epoch: e.epoch + 1)]
        }
        func write(epoch: UInt64) -> Action {
            defer { nextSerial &+= 1 }
            e.unechoed = nextSerial
            return .claim(address, rssi: myRSSI, serial: nextSerial, epoch: epoch)
        }
        /// Free to claim: claimed once it has been free for this gateway's delay (the best hearer's is shortest).
        func claimWhenDue(_ rssi: Double) -> [Action] {
            e.freeSince = e.freeSince ?? now
            return now >= e.freeSince! + settings.claimDelay(rssi) ? claim() : []
        }
        /// No echo for the fence: the others' leases on our last claim are running out. Let go first.
        func fence(_ echoedAt: Double) -> [Action]? {
            guard now >= echoedAt + settings.fenceS else { return nil }
            counters.fences += 1
            e.state = .idle
            if broker != .away { broker = .unanswered }
            return [.letGo(address)]
        }

        // A claim of ours we do not hold (written before a restart, or before a fence): the device is not free until it
        // lapses, so that the claims of whoever took over meanwhile have time to arrive.
        let ownUnheld = current?.gateway == me
        switch e.state {
        case .idle:
            if let o = other {
                e.state = .standby(owner: o.gateway)
                e.freeSince = nil
                return [.standby(address, owner: o.gateway)]
            }
            guard ready, !ownUnheld, let mine = myRSSI else {
                e.freeSince = nil
                return []
            }
            return claimWhenDue(mine)
        case .standby(let owner):
            guard let o = other else {
                // The owner went offline, its lease ran out, or it let go: the best hearer left claims first.
                guard ready, !ownUnheld, let mine = myRSSI else {
                    e.state = .idle
                    e.freeSince = nil
                    return []
                }
                let actions = claimWhenDue(mine)
                if !actions.isEmpty { counters.takeovers += 1 }
                return actions
            }
            e.freeSince = nil
            if o.gateway != owner {
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            // Not from an owner whose last will came: it may be cut off, unable to see the claim and yield, and would
            // keep its link until its fence while this gateway connected after settling. Its lease runs out first.
            guard ready, presence[o.gateway] != .lost, let mine = myRSSI,
                mine >= (o.rssi ?? -.infinity) + settings.marginDB
            else {
                e.betterSince = nil
                return []
            }
            e.betterSince = e.betterSince ?? now
            guard now >= e.betterSince! + settings.dwellS else { return [] }
            counters.takeovers += 1
            return claim(displacing: o)
        case .claiming(let since, let displacing):
            guard now >= since + settings.settleS else { return [] }
            if let o = other {
                // A claim written after ours: it is the last word.
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            guard let mine = current, mine.gateway == me, e.unechoed == nil else {
                // Ours never came back: the broker is away, or does not answer (a partition the client has not
                // noticed). Nothing more is claimed until it answers, so that at most one claim waits in the network.
                e.state = .idle
                if broker != .away { broker = .unanswered }
                return []
            }
            // Settled: our claim came back and none came after it, so it stands as of its echo. Taken by the margin, it
            // is connected once the displaced owner's lease has run out.
            if let connectAt = displacing, now < connectAt {
                e.state = .displacing(connectAt: connectAt, renewedAt: since, echoedAt: mine.receivedAt)
                return []
            }
            e.state = .owner(since: now, renewedAt: now, echoedAt: mine.receivedAt)
            return [.connect(address)]
        case .displacing(let connectAt, let renewedAt, let echoedAt):
            if let o = other {
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            if let fenced = fence(echoedAt) { return fenced }
            if now >= connectAt {
                e.state = .owner(since: now, renewedAt: renewedAt, echoedAt: echoedAt)
                return [.connect(address)]
            }
            guard now >= renewedAt + settings.renewS || current == nil else { return [] }
            e.state = .displacing(connectAt: connectAt, renewedAt: now, echoedAt: echoedAt)
            return [write(epoch: e.epoch)]
        case .owner(let since, let renewedAt, let echoedAt):
            if let o = other {
                counters.yields += 1
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            if let fenced = fence(echoedAt) { return fenced }
            guard now >= renewedAt + settings.renewS || current == nil else { return [] }
            e.state = .owner(since: since, renewedAt: now, echoedAt: echoedAt)
            return [write(epoch: e.epoch)]
        }
    }
}
