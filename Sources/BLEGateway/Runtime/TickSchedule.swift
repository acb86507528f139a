/// When the gateway's periodic work is due: the ranging interval's beacon summaries and the health report, each on
/// its own interval. Pure: the tick loop asks what is due at `now` and then waits until `next` (or until a remote
/// document changes the intervals, which `retune` takes at once rather than at the end of a long old interval).
struct TickSchedule: Equatable, Sendable {
    /// What came due at one tick.
    struct Due: OptionSet, Sendable {
        let rawValue: UInt8
        static let summaries = Due(rawValue: 1 << 0)
        static let health = Due(rawValue: 1 << 1)
    }

    private(set) var summaryEvery: Duration
    private(set) var healthEvery: Duration
    /// The next summaries; nil while they rest (nothing to summarise: `restSummaries`).
    private(set) var nextSummary: Duration?
    private(set) var nextHealth: Duration

    /// The first summaries one interval after `start`; the first health report within 5 s (sooner if its interval is
    /// shorter), so a gateway that has just started is on the dashboard before its first long health interval ends.
    init(start: Duration, summaryEvery: Duration, healthEvery: Duration) {
        self.summaryEvery = summaryEvery
        self.healthEvery = healthEvery
        nextSummary = start + summaryEvery
        nextHealth = start + min(.seconds(5), healthEvery)
    }

    /// The earliest deadline: the health report's, or the summaries' when they do not rest.
    var next: Duration { nextSummary.map { min($0, nextHealth) } ?? nextHealth }

    /// Nothing to summarise: no summaries are due until `resumeSummaries`.
    mutating func restSummaries() { nextSummary = nil }

    /// Something to summarise again: the first summaries one interval from `now` (a whole interval of sightings, as
    /// at start). Summaries that do not rest keep their schedule.
    mutating func resumeSummaries(at now: Duration) {
        if nextSummary == nil { nextSummary = now + summaryEvery }
    }

    /// New intervals: each pending deadline moves by the difference, as if the new interval had run since the last
    /// one came due.
    mutating func retune(summaryEvery newSummary: Duration, healthEvery newHealth: Duration) {
        nextSummary? += newSummary - summaryEvery
        summaryEvery = newSummary
        nextHealth += newHealth - healthEvery
        healthEvery = newHealth
    }

    /// What is due at `now`, each deadline taken moved on by its interval. One that fell behind (the process was
    /// suspended, the machine slept) comes next an interval from `now`: late work is done once, not in a burst.
    mutating func take(at now: Duration) -> Due {
        var due: Due = []
        if let summary = nextSummary, now >= summary {
            due.insert(.summaries)
            nextSummary = summary + summaryEvery < now ? now + summaryEvery : summary + summaryEvery
        }
        if now >= nextHealth {
            due.insert(.health)
            nextHealth += healthEvery
            if nextHealth < now { nextHealth = now + healthEvery }
        }
        return due
    }
}
