import BLEHCI
import BLETransport

/// One gateway per peripheral, agreed through the broker alone (docs/PERIPHERALS.md, "One owner per peripheral").
///
/// Each configured address has one retained claim topic, `<prefix>/fleet/peripherals/<address>/owner`: the last
/// claim written there is the owner, as long as its gateway's retained status says online and the claim's lease has
/// not run out (the owner renews it). Every gateway sees the claims in the broker's one order, so the last word is
/// the same for all of them. A gateway claims what no valid claim holds and it hears; it waits `settle_s` for its own
/// claim to come back (another written after it wins), then connects. A standby gateway takes over only when it hears
/// the device better than the owner's claim says, by `margin_db`, for `dwell_s`; the owner then yields. Pure: events
/// and the clock in, actions out; the coordinator does the I/O.
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
        /// The owner's RSSI to the device (filtered); nil when it no longer hears it.
        public var rssi: Double?
        public var leaseS: Double
        /// This gateway's clock when the claim arrived (a lease is timed here, immune to other gateways' clocks).
        public var receivedAt: Double

        public init(gateway: String, rssi: Double?, leaseS: Double, receivedAt: Double) {
            self.gateway = gateway
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
        /// This gateway's claim is written; waiting `settle_s` for a later one.
        case claiming(since: Double)
        /// This gateway owns it (and keeps it connected).
        case owner(since: Double, renewedAt: Double)
    }

    public enum Action: Sendable, Equatable {
        /// Write this gateway's claim (retained), with its RSSI to the device.
        case claim(BDAddress, rssi: Double?)
        /// Clear this gateway's claim (an empty retained message).
        case release(BDAddress)
        /// Keep it connected.
        case connect(BDAddress)
        /// Let it go (disconnect if connected) and report `standby`, naming the owner.
        case standby(BDAddress, owner: String)
        /// Let it go: this gateway can no longer hold its claim (its broker connection is gone, and with it, by its
        /// last will, its claims).
        case letGo(BDAddress)
    }

    public struct Counters: Sendable, Equatable {
        /// Claims naming something that is not an online gateway of this fleet: ignored.
        public var foreignClaims = 0
        public var takeovers = 0
        public var yields = 0
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
    }

    public let me: String
    public let settings: Settings
    var entries: [BDAddress: Entry]
    var online: Set<String> = []
    var readyAt: Double?
    var adapterUp = false
    public private(set) var counters = Counters()

    public init(gateway: String, addresses: [BDAddress], settings: Settings = Settings()) {
        me = gateway
        self.settings = settings
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
            heardRecently(e, now: now), let mine = e.rssi
        else { return false }
        return mine >= (other.rssi ?? -.infinity) + settings.marginDB
    }

    /// The claim topic's retained or live message: a claim, or nil when cleared. Returns whether it was taken (false:
    /// written by something that is not an online gateway of this fleet, and ignored).
    @discardableResult
    public mutating func claimed(_ address: BDAddress, _ claim: Claim?, now: Double) -> Bool {
        guard entries[address] != nil else { return true }
        if let c = claim, c.gateway != me, !online.contains(c.gateway) {
            counters.foreignClaims += 1
            entries[address]!.unconfirmed = c
            return false
        }
        entries[address]!.claim = claim
        entries[address]!.unconfirmed = nil
        return true
    }

    /// A gateway's retained status (`online` or not).
    public mutating func status(of gateway: String, online isOnline: Bool) {
        if isOnline { online.insert(gateway) } else { online.remove(gateway) }
        guard isOnline else { return }
        for (address, e) in entries where e.unconfirmed?.gateway == gateway {
            // Its claim came before its status: it was a gateway of this fleet after all.
            entries[address]!.claim = e.unconfirmed
            entries[address]!.unconfirmed = nil
            counters.foreignClaims -= 1
        }
    }

    /// Connected to the broker: retained claims and statuses come first, so claiming waits `startup_s`.
    public mutating func brokerConnected(now: Double) {
        if readyAt == nil { readyAt = now + settings.startupS }
    }

    /// The broker connection is gone: the broker has sent this gateway's last will, so the others see its claims
    /// void and take the devices over. It lets go of them at once rather than hold a link another is making too.
    public mutating func brokerLost(now: Double) -> [Action] {
        readyAt = nil
        var out: [Action] = []
        for (address, e) in entries {
            switch e.state {
            case .owner, .claiming:
                entries[address]!.state = .idle
                out.append(.letGo(address))
            case .idle, .standby:
                break
            }
        }
        return out
    }

    /// The adapter that makes the links came up or went away. Going away releases everything owned: another
    /// gateway takes over at once rather than after the lease.
    public mutating func adapter(up: Bool, now: Double) -> [Action] {
        adapterUp = up
        guard !up else { return [] }
        var out: [Action] = []
        for (address, e) in entries {
            switch e.state {
            case .owner, .claiming:
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
            case .claiming(let since): times.append(since + settings.settleS)
            case .owner(_, let renewedAt): times.append(renewedAt + settings.renewS)
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
        guard let c, now < c.receivedAt + c.leaseS, c.gateway == me || online.contains(c.gateway) else { return nil }
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

        func claim() -> [Action] {
            e.state = .claiming(since: now)
            e.betterSince = nil
            e.freeSince = nil
            return [.claim(address, rssi: myRSSI)]
        }
        /// Free to claim: claimed once it has been free for this gateway's delay (the best hearer's is shortest).
        func claimWhenDue(_ rssi: Double) -> [Action] {
            e.freeSince = e.freeSince ?? now
            return now >= e.freeSince! + settings.claimDelay(rssi) ? claim() : []
        }

        switch e.state {
        case .idle:
            if let o = other {
                e.state = .standby(owner: o.gateway)
                e.freeSince = nil
                return [.standby(address, owner: o.gateway)]
            }
            guard ready, let mine = myRSSI else {
                e.freeSince = nil
                return []
            }
            return claimWhenDue(mine)
        case .standby(let owner):
            guard let o = other else {
                // The owner went offline, its lease ran out, or it let go: the best hearer left claims first.
                guard ready, let mine = myRSSI else {
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
            guard ready, let mine = myRSSI, mine >= (o.rssi ?? -.infinity) + settings.marginDB else {
                e.betterSince = nil
                return []
            }
            e.betterSince = e.betterSince ?? now
            guard now >= e.betterSince! + settings.dwellS else { return [] }
            counters.takeovers += 1
            return claim()
        case .claiming(let since):
            guard now >= since + settings.settleS else { return [] }
            if let o = other {
                // A claim written after ours: it is the last word.
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            guard current?.gateway == me else {
                // Ours never came back (the broker is away, or it was cleared): try again next time.
                e.state = .idle
                return []
            }
            e.state = .owner(since: now, renewedAt: now)
            return [.connect(address)]
        case .owner(let since, let renewedAt):
            if let o = other {
                counters.yields += 1
                e.state = .standby(owner: o.gateway)
                return [.standby(address, owner: o.gateway)]
            }
            guard now >= renewedAt + settings.renewS || current == nil else { return [] }
            e.state = .owner(since: since, renewedAt: now)
            return [.claim(address, rssi: myRSSI)]
        }
    }
}
