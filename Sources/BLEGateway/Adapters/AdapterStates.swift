import BLEDomain

/// The adapter states the gateway has published: the one that scans (`…/adapter`) and, with two adapters, each one's
/// own (`…/adapters/<slot>`), with since when each has been in its state. Pure: a report in; out, whether it is news
/// to publish, its `since`, and whether the gateway's adapter has just started scanning again.
struct AdapterStates: Sendable {
    /// What a report changed.
    struct Change: Equatable, Sendable {
        /// When the adapter entered the state the report gives (the time of this report, unless only details
        /// changed, such as the duties of a slot, or the reason).
        var since: Double
        /// The gateway's adapter went from another state to poweredOn: the ranging and regions resume from here.
        var scanningAgain = false
    }

    /// The gateway's adapter as last reported (nil before the first report).
    private(set) var current: AdapterReport?
    private var since = 0.0
    private var slots: [AdapterRoles.Slot: (report: AdapterReport, since: Double)] = [:]

    /// Whether the gateway's adapter last said poweredOn.
    var scanning: Bool { current?.state == .poweredOn }

    /// `report` received at `now` (Unix time). Nil when it repeats the last one of its scope: nothing to publish.
    mutating func record(_ report: AdapterReport, at now: Double) -> Change? {
        if report.scope == .slot {
            let slot = report.slot ?? .primary
            let last = slots[slot]
            guard last?.report != report else { return nil }
            let since = last.flatMap { $0.report.state == report.state ? $0.since : nil } ?? now
            slots[slot] = (report, since)
            return Change(since: since)
        }
        guard current != report else { return nil }
        let stateChanged = current?.state != report.state
        if stateChanged { since = now }
        current = report
        return Change(since: since, scanningAgain: stateChanged && report.state == .poweredOn)
    }
}
