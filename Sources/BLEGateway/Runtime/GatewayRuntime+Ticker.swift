import BLETransport

/// The gateway's clockwork: one loop that does what `TickSchedule` says is due, and feeds the watchdog.
extension GatewayRuntime {
    /// Every ranging interval: the beacons' summaries; every health interval: the health topic; the service
    /// manager's watchdog between them. When each is due is `TickSchedule`'s. With nothing to summarise (no beacon,
    /// every region outside) the summaries rest, and the sighting that brings one wakes the loop.
    func tick(started: Duration) async {
        let publishing = inForce.withLock { $0.publishing }
        var schedule = TickSchedule(
            start: clock.now(), summaryEvery: .seconds(publishing.rangingIntervalSeconds),
            healthEvery: .seconds(publishing.healthIntervalSeconds))
        var rates = HealthRates(start: clock.now())
        var watchdog = makeWatchdog()
        while !Task.isCancelled {
            if pipeline.withLock({ $0.rest() }) {
                schedule.restSummaries()
            } else {
                schedule.resumeSummaries(at: clock.now())
            }
            // Until the next summary, health report or watchdog feed, or until a remote document changes the
            // configuration in force (its intervals then take effect at once, not at the end of a long old one), or
            // a sighting ends the summaries' rest.
            let due = min(schedule.next, watchdog?.next ?? schedule.next)
            let before = clock.now()
            if due > before { await tickerWake.wait(upTo: due - before, clock: clock) }
            if Task.isCancelled { break }
            let now = clock.now()
            let p = inForce.withLock { $0.publishing }
            schedule.retune(
                summaryEvery: .seconds(p.rangingIntervalSeconds), healthEvery: .seconds(p.healthIntervalSeconds))
            feedWatchdog(&watchdog, now: now)
            let work = schedule.take(at: now)
            if work.contains(.summaries) { flushIntervals() }
            if work.contains(.health) {
                let stats = publisher.statistics
                let counters = source.counters
                let rate = rates.next(acknowledged: stats.acknowledged, reports: counters.reports, at: now)
                let health = health(
                    uptime: now - started, publish: stats, counters: counters, publishRate: rate.publish,
                    reportRate: rate.reports)
                _ = spool.append(readings.health(health, ts: clock.unixTime(), synced: clockSynchronized()))
            }
        }
    }
}
