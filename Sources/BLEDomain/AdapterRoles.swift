/// Two adapters, as gateways with two dongles run them: the primary scans, the secondary makes the peripheral
/// connections; when one is not usable the other takes both duties, and gives its own back once the other has been
/// usable for `handback` (so an adapter that flaps does not drag every link across at each blip).
///
/// A pure state machine like `AdapterLifecycle`: each adapter's usability goes in, the duties each adapter must
/// carry come out, in the order to carry them out — duties taken away before duties given, so a link layer is never
/// served by both adapters at once. Time is injected.
public struct AdapterRoles: Sendable {
    public enum Slot: String, CaseIterable, Sendable, CustomStringConvertible {
        case primary
        case secondary
        public var description: String { rawValue }
        /// The duty this adapter carries when both are usable.
        var own: Duties { self == .primary ? .scan : .connect }
        var other: Slot { self == .primary ? .secondary : .primary }
    }

    public struct Duties: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Scanning: the gateway's sightings (beacons, ranging, regions, and the advertising that connections wait for).
        public static let scan = Duties(rawValue: 1)
        /// The peripheral links (the controller role: connection attempts, ACL, GATT).
        public static let connect = Duties(rawValue: 2)
        public static let both: Duties = [.scan, .connect]

        /// As published in the adapter topics' `roles`.
        public var names: [String] {
            (contains(.scan) ? ["scan"] : []) + (contains(.connect) ? ["connect"] : [])
        }
        public var description: String { names.isEmpty ? "none" : names.joined(separator: "+") }
    }

    public enum Event: Sendable, Equatable {
        /// The adapter is usable (its lifecycle published poweredOn).
        case usable(Slot)
        /// The adapter is not usable (any other state: resetting, absent, blocked …).
        case unusable(Slot)
        /// The caller's wait ended.
        case timePassed
    }

    public enum Action: Sendable, Equatable {
        /// From now on this adapter carries exactly these duties.
        case assign(Slot, Duties)
        /// Deliver `.timePassed` at this time (the latest replaces earlier ones).
        case wait(until: Duration)
    }

    public struct Statistics: Sendable, Equatable {
        /// Times a duty moved from one adapter to the other (a takeover or a handback).
        public var handovers = 0
        public init() {}
    }

    /// How long an adapter that came back must stay usable before it gets its own duty back.
    public let handback: Duration
    public private(set) var statistics = Statistics()
    /// What each adapter carries now.
    public private(set) var duties: [Slot: Duties] = [.primary: [], .secondary: []]
    /// Since when each adapter is usable (nil: not usable).
    private var usableSince: [Slot: Duration] = [:]
    /// Adapters that were usable once and then lost: their return waits for `handback`.
    private var returning: Set<Slot> = []

    public init(handback: Duration = .seconds(10)) {
        self.handback = handback
    }

    /// Feeds one event; returns the assignments that changed, removals first, then a `wait` if a handback is due.
    public mutating func handle(_ event: Event, now: Duration) -> [Action] {
        switch event {
        case .usable(let slot):
            if usableSince[slot] == nil { usableSince[slot] = now }
        case .unusable(let slot):
            if usableSince.removeValue(forKey: slot) != nil { returning.insert(slot) }
        case .timePassed:
            break
        }
        var wanted: [Slot: Duties] = [.primary: [], .secondary: []]
        for slot in Slot.allCases {
            let duty = slot.own
            let holder: Slot? =
                switch (settled(slot, now: now), usableSince[slot.other] != nil) {
                case (true, _): slot
                // Back, but not for long enough: the other keeps the duty if it has it (or this one is not usable at all).
                case (false, true): duties[slot.other]!.contains(duty) || usableSince[slot] == nil ? slot.other : slot
                case (false, false): usableSince[slot] == nil ? nil : slot
                }
            if let holder { wanted[holder]!.insert(duty) }
        }
        let before = duties
        var out: [Action] = []
        // Removals first: the caller stops a duty on one adapter before it starts it on the other.
        for slot in Slot.allCases where !duties[slot]!.subtracting(wanted[slot]!).isEmpty {
            duties[slot] = duties[slot]!.intersection(wanted[slot]!)
            out.append(.assign(slot, duties[slot]!))
        }
        for slot in Slot.allCases where duties[slot] != wanted[slot] {
            let gained = wanted[slot]!.subtracting(duties[slot]!)
            statistics.handovers +=
                [Duties.scan, .connect].filter {
                    gained.contains($0) && before[slot.other]!.contains($0)
                }.count
            duties[slot] = wanted[slot]!
            out.append(.assign(slot, duties[slot]!))
        }
        for slot in Slot.allCases where returning.contains(slot) && settled(slot, now: now) {
            returning.remove(slot)
        }
        if let due = nextHandback(now: now) { out.append(.wait(until: due)) }
        return out
    }

    /// Usable, and either never lost or back for `handback` already.
    private func settled(_ slot: Slot, now: Duration) -> Bool {
        guard let since = usableSince[slot] else { return false }
        return !returning.contains(slot) || now - since >= handback
    }

    private func nextHandback(now: Duration) -> Duration? {
        Slot.allCases.compactMap { slot -> Duration? in
            guard returning.contains(slot), let since = usableSince[slot] else { return nil }
            return since + handback
        }.filter { $0 > now }.min()
    }
}
