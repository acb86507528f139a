/// Enter/exit monitoring of a few regions (docs/design/ranging.md, "Regions").
///
/// Pure: sightings and times in, events out. `observe` reports enters at once (the latency is the
/// first qualifying sighting); `tick(at:)` reports exits and first determinations of "outside",
/// so call it often (every 100 ms–1 s; its cost is per region, not per beacon). Every region starts
/// `unknown`, as after `resetToUnknown(at:)`: it becomes `inside` at the first qualifying sighting
/// and `outside` after `exitTimeout` without one, and `entered`/`exited` are reported only when the
/// new state differs from the last known one, so an adapter recovery causes no false exit.
public struct RegionMonitor: Sendable {
    @usableFromInline struct Entry: Sendable {
        @usableFromInline var region: Region
        @usableFromInline var state = RegionState.unknown
        /// The state before the last unknown spell (nil: never known).
        @usableFromInline var lastKnown: RegionState?
        @usableFromInline var unknownSince: Double
        /// Last sighting of any covered beacon, and last one strong enough to stay.
        @usableFromInline var lastSeen = -Double.infinity
        @usableFromInline var lastStay = -Double.infinity
        @usableFromInline let exitTimeout: Double
        @usableFromInline let exitDwell: Double
    }

    @usableFromInline var entries: [Entry]
    @usableFromInline let needsName: Bool
    /// Changes between inside and outside, for the status topic (a flapping region shows here).
    public private(set) var transitions = 0

    public init(regions: [Region], at now: Duration) {
        entries = regions.map {
            Entry(
                region: $0, unknownSince: now.seconds, exitTimeout: $0.exitTimeout.seconds,
                exitDwell: $0.exitDwell.seconds)
        }
        needsName = regions.contains { $0.matcher.needsName }
    }

    public var regions: [Region] { entries.map(\.region) }

    public func state(of regionID: String) -> RegionState? {
        entries.first { $0.region.id == regionID }?.state
    }

    /// Whether time alone can change nothing (`tick` would return no event): every region is outside, where only a
    /// sighting moves it. An unknown region is determined after a while, and an inside one exits when unheard.
    public var atRest: Bool { entries.allSatisfy { $0.state == .outside } }

    /// Whether `observe` wants the advertised name (a name-prefix region exists).
    public var wantsNames: Bool { needsName }

    /// One sighting of `identity` with its RSSI (pass the ranging filter's, not the raw reading,
    /// when regions have thresholds: raw readings scatter by the shadowing's σ).
    public mutating func observe(
        _ identity: BeaconIdentity, name: ArraySlice<UInt8>? = nil, rssi: Double?, at now: Duration
    ) -> [RegionEvent] {
        var events: [RegionEvent] = []
        let t = now.seconds
        for i in entries.indices where entries[i].region.matcher.matches(identity, name: name) {
            entries[i].lastSeen = t
            let r = entries[i].region
            if let stay = r.stayRSSI {
                if let rssi, rssi >= stay { entries[i].lastStay = t }
            } else {
                entries[i].lastStay = t
            }
            guard entries[i].state != .inside else { continue }
            let enters = r.enterRSSI.map { e in rssi.map { $0 >= e } ?? false } ?? true
            if enters {
                transition(i, to: .inside, at: now, identity: identity, into: &events)
            }
        }
        return events
    }

    /// Exits, and "outside" determinations, due by `now`.
    public mutating func tick(at now: Duration) -> [RegionEvent] {
        var events: [RegionEvent] = []
        let t = now.seconds
        for i in entries.indices {
            let e = entries[i]
            switch e.state {
            case .inside:
                if t - e.lastSeen >= e.exitTimeout || t - e.lastStay >= e.exitDwell && e.region.stayRSSI != nil {
                    transition(i, to: .outside, at: now, identity: nil, into: &events)
                }
            case .unknown:
                // Nothing qualifying for a whole timeout since the state was lost: outside.
                if t - e.unknownSince >= e.exitTimeout {
                    transition(i, to: .outside, at: now, identity: nil, into: &events)
                }
            case .outside:
                break
            }
        }
        return events
    }

    /// Forgets every region's state (after an adapter recovery: what happened while deaf is not
    /// known). Each is determined afresh; `entered`/`exited` follow only a real change.
    public mutating func resetToUnknown(at now: Duration) -> [RegionEvent] {
        var events: [RegionEvent] = []
        for i in entries.indices where entries[i].state != .unknown {
            entries[i].lastKnown = entries[i].state
            entries[i].state = .unknown
            entries[i].unknownSince = now.seconds
            events.append(RegionEvent(region: entries[i].region.id, kind: .determined(.unknown), time: now))
        }
        for i in entries.indices { entries[i].unknownSince = now.seconds }
        return events
    }

    @usableFromInline mutating func transition(
        _ i: Int, to state: RegionState, at now: Duration, identity: BeaconIdentity?, into events: inout [RegionEvent]
    ) {
        let id = entries[i].region.id
        let before = entries[i].state == .unknown ? entries[i].lastKnown : entries[i].state
        entries[i].state = state
        if state == .inside { entries[i].lastStay = now.seconds }
        events.append(RegionEvent(region: id, kind: .determined(state), time: now, identity: identity))
        if let before, before != state {
            transitions += 1
            events.append(
                RegionEvent(region: id, kind: state == .inside ? .entered : .exited, time: now, identity: identity))
        }
    }
}
