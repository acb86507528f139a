import Foundation

/// One active fleet service per site, agreed through the broker alone (docs/FLEET.md, "Two instances"): the rules the
/// peripherals' owners follow (docs/PERIPHERALS.md, "One owner per peripheral"), for one thing to own.
///
/// The site has one retained claim topic, `<prefix>/fleet/lease`: the last claim written there holds the lease for
/// `lease_s` after it arrived, and its writer renews it every `renew_s`. Every instance sees the claims in the broker's
/// one order, so the last word is the same for all. An instance claims when no other instance's claim has arrived
/// within its lease (or the holder released it); it acts as the active instance only after its own claim came back
/// and `settle_s` passed with no later one (a claim written after it wins). Only the active instance publishes.
///
/// The active instance fences itself: it keeps acting only while the broker has echoed its latest claim within
/// `fence_s` (a fraction of the lease). Cut off from the broker (a partition the client notices only at its
/// keepalive, or never) it stops before any other instance's lease on its last echoed claim can run out, so two
/// instances never publish at once. Each claim carries an epoch: a takeover writes one more than the highest seen,
/// a renewal keeps its own, and a claim with a lower epoch than one already seen is stale and ignored (the renewals a
/// cut-off instance wrote before it fenced, delivered when its network comes back, take nothing back).
///
/// Pure: events and the clock (seconds) in, actions out; the service does the I/O.
public struct FleetLease: Sendable {
    public struct Settings: Sendable, Equatable {
        public init() {}
        /// A claim not renewed for this long is void.
        public var leaseS = 15.0
        /// The active instance writes its claim again this often.
        public var renewS = 5.0
        /// The active instance stops when the broker has echoed none of its claims for this fraction of the lease:
        /// before the others' lease on its last echoed claim runs out (they received it when it did).
        public var fenceFraction = 0.75
        public var fenceS: Double { leaseS * fenceFraction }
        /// After connecting, the retained claim arrives first: nothing is claimed before.
        public var startupS = 2.0
        /// After its claim's echo, an instance waits this long for a later claim before it acts.
        public var settleS = 1.0

        /// A lease of `leaseS`, renewed every third of it (a lost renewal leaves two before the fence).
        public init(leaseS: Double) {
            self.leaseS = leaseS
            renewS = leaseS / 3
        }
    }

    /// A claim as written on the lease topic (`{"instance":…,"serial":…,"epoch":…,"lease_s":…}`).
    public struct Claim: Sendable, Equatable, Codable {
        public var instance: String
        /// The writer's serial for this claim: its own claim coming back with the serial it last wrote is the echo.
        public var serial: UInt64
        /// One more at each change of holder.
        public var epoch: UInt64
        public var leaseS: Double

        enum CodingKeys: String, CodingKey {
            case instance, serial, epoch
            case leaseS = "lease_s"
        }

        public init(instance: String, serial: UInt64, epoch: UInt64, leaseS: Double) {
            self.instance = instance
            self.serial = serial
            self.epoch = epoch
            self.leaseS = leaseS
        }

        /// The payload; `parse` reads it back (nil for anything else: bad input on the topic is ignored, counted).
        public var payload: [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array((try? encoder.encode(self)) ?? Data())
        }

        public static func parse(_ payload: [UInt8]) -> Claim? {
            guard let c = try? JSONDecoder().decode(Claim.self, from: Data(payload)), !c.instance.isEmpty,
                c.leaseS.isFinite, c.leaseS > 0
            else { return nil }
            return c
        }
    }

    public enum State: Sendable, Equatable {
        /// Not connected to the broker.
        case away
        /// Connected; the retained claim has until `until` to arrive.
        case waking(until: Double)
        /// Another instance holds the lease until `until` (this instance's clock) unless it renews.
        case standby(holder: String, until: Double)
        /// This instance's claim `serial` was written at `writtenAt`; `echoedAt` once the broker sent it back.
        case claiming(serial: UInt64, writtenAt: Double, echoedAt: Double?)
        /// This instance is the active one: its claim was last written at `renewedAt`, last echoed at `echoedAt`.
        case active(since: Double, renewedAt: Double, echoedAt: Double)
        /// It was active or claiming, and the broker echoed nothing for `fence_s`: nothing is claimed until a message
        /// arrives from the broker again (a claim written into a partition would reach the others after they took
        /// over, with the same epoch as theirs, and win).
        case fenced
    }

    public enum Reason: Sendable, Equatable {
        /// A later claim by another instance.
        case yielded(to: String)
        case fenced
        case disconnected
        case stopping
    }

    public enum Action: Sendable, Equatable {
        /// Write this claim, retained.
        case claim(Claim)
        /// Clear the lease topic (an empty retained message): the standby takes over at once.
        case release
        /// Start publishing.
        case activate(epoch: UInt64)
        /// Stop publishing.
        case deactivate(Reason)
    }

    public struct Counters: Sendable, Equatable, Encodable {
        /// Claims with a lower epoch than one already seen (a cut-off instance's late renewals): ignored.
        public var staleClaims = 0
        /// Payloads on the lease topic that are not a claim: ignored.
        public var unreadable = 0
        /// Times this instance became the active one.
        public var activations = 0
        /// Times this instance stopped publishing because the broker echoed nothing of its claim for too long.
        public var fences = 0
        public init() {}
    }

    /// The site's lease topic (retained).
    public static func topic(_ prefix: String) -> String { "\(prefix)/fleet/lease" }

    public let me: String
    public let settings: Settings
    public private(set) var state = State.away
    public private(set) var counters = Counters()
    /// The highest epoch seen on the topic, and this instance's own while it claims or holds the lease.
    var epoch: UInt64 = 0
    var ownEpoch: UInt64 = 0
    var nextSerial: UInt64
    /// While waking: another instance's claim that arrived, and when (cleared by a release).
    var heldBy: (instance: String, until: Double)?

    /// - Parameter firstSerial: drawn at random by the service, so a restarted instance does not take its previous
    ///   run's retained claim for an echo.
    public init(instance: String, settings: Settings = Settings(), firstSerial: UInt64 = 1) {
        me = instance
        self.settings = settings
        nextSerial = firstSerial
    }

    public var isActive: Bool {
        if case .active = state { return true }
        return false
    }

    /// When `deadline(now:)` is next due; nil when only an event can change anything.
    public var nextDeadline: Double? {
        switch state {
        case .away, .fenced: return nil
        case .waking(let until), .standby(_, let until): return until
        case .claiming(_, let writtenAt, let echoedAt):
            return echoedAt.map { $0 + settings.settleS } ?? writtenAt + settings.fenceS
        case .active(_, let renewedAt, let echoedAt):
            return min(renewedAt + settings.renewS, echoedAt + settings.fenceS)
        }
    }

    // MARK: Events

    public mutating func connected(now: Double) -> [Action] {
        state = .waking(until: now + settings.startupS)
        heldBy = nil
        return []
    }

    public mutating func disconnected(now: Double) -> [Action] {
        defer { state = .away }
        return isActive ? [.deactivate(.disconnected)] : []
    }

    /// A message on the lease topic (an empty payload is a release).
    public mutating func received(_ payload: [UInt8], now: Double) -> [Action] {
        if state == .fenced { state = .waking(until: now + settings.startupS) }
        guard !payload.isEmpty else { return released(now: now) }
        guard let claim = Claim.parse(payload) else {
            counters.unreadable += 1
            return []
        }
        guard claim.epoch >= epoch else {
            counters.staleClaims += 1
            return []
        }
        epoch = claim.epoch
        let mine = claim.instance == me
        switch state {
        case .away, .fenced:
            return []
        case .waking:
            // This instance's own name is its previous run's claim (or its own, echoed): not another holder.
            if !mine { heldBy = (claim.instance, now + claim.leaseS) }
            return []
        case .standby:
            // A claim of this instance's name that it did not write now is its previous run's: the lease is free.
            if mine { return claimNow(now: now) }
            state = .standby(holder: claim.instance, until: now + claim.leaseS)
            return []
        case .claiming(let serial, let writtenAt, let echoedAt):
            if mine {
                if claim.serial == serial, echoedAt == nil {
                    state = .claiming(serial: serial, writtenAt: writtenAt, echoedAt: now)
                }
                return []
            }
            // Another's claim before this one's echo was written before it: this one is later, and wins.
            guard echoedAt != nil else { return [] }
            state = .standby(holder: claim.instance, until: now + claim.leaseS)
            return []
        case .active(let since, let renewedAt, _):
            if mine {
                if claim.serial == nextSerial - 1 {
                    state = .active(since: since, renewedAt: renewedAt, echoedAt: now)
                }
                return []
            }
            state = .standby(holder: claim.instance, until: now + claim.leaseS)
            return [.deactivate(.yielded(to: claim.instance))]
        }
    }

    /// The lease topic was cleared: the holder stopped (or an operator cleared it).
    private mutating func released(now: Double) -> [Action] {
        switch state {
        case .away, .fenced:
            return []
        case .waking:
            heldBy = nil
            return []
        case .standby:
            return claimNow(now: now)
        case .claiming(_, _, let echoedAt):
            // Cleared after this instance's claim arrived: the others see it free, so claim again, later than theirs.
            return echoedAt == nil ? [] : claimNow(now: now)
        case .active(let since, _, let echoedAt):
            // Still the holder: write the claim again at once with the same epoch, which no one has passed.
            let claim = nextClaim(epoch: ownEpoch)
            state = .active(since: since, renewedAt: now, echoedAt: echoedAt)
            return [.claim(claim)]
        }
    }

    /// Time passed: the deadline `nextDeadline` asked for (an early call changes nothing).
    public mutating func deadline(now: Double) -> [Action] {
        switch state {
        case .away, .fenced:
            return []
        case .waking(let until):
            guard now >= until else { return [] }
            if let h = heldBy, h.until > now {
                state = .standby(holder: h.instance, until: h.until)
                return []
            }
            return claimNow(now: now)
        case .standby(_, let until):
            return now >= until ? claimNow(now: now) : []
        case .claiming(_, let writtenAt, let echoedAt):
            if let echoedAt {
                guard now >= echoedAt + settings.settleS else { return [] }
                state = .active(since: now, renewedAt: writtenAt, echoedAt: echoedAt)
                counters.activations += 1
                return [.activate(epoch: ownEpoch)] + deadline(now: now)
            }
            guard now >= writtenAt + settings.fenceS else { return [] }
            // The broker never sent the claim back (refused by its ACL, or cut off): nothing to hold.
            counters.fences += 1
            state = .fenced
            return []
        case .active(let since, let renewedAt, let echoedAt):
            if now >= echoedAt + settings.fenceS {
                counters.fences += 1
                state = .fenced
                return [.deactivate(.fenced)]
            }
            guard now >= renewedAt + settings.renewS else { return [] }
            state = .active(since: since, renewedAt: now, echoedAt: echoedAt)
            return [.claim(nextClaim(epoch: ownEpoch))]
        }
    }

    /// Stopping gracefully: the active instance clears the lease so that the standby need not wait it out.
    public mutating func stop() -> [Action] {
        defer { state = .away }
        switch state {
        case .active: return [.deactivate(.stopping), .release]
        case .claiming: return [.release]
        default: return []
        }
    }

    private mutating func claimNow(now: Double) -> [Action] {
        ownEpoch = epoch + 1
        epoch = ownEpoch
        let claim = nextClaim(epoch: ownEpoch)
        state = .claiming(serial: claim.serial, writtenAt: now, echoedAt: nil)
        return [.claim(claim)]
    }

    private mutating func nextClaim(epoch: UInt64) -> Claim {
        defer { nextSerial &+= 1 }
        return Claim(instance: me, serial: nextSerial, epoch: epoch, leaseS: settings.leaseS)
    }
}
