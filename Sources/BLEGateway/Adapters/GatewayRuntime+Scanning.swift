import BLEHCI
import BLETransport

/// The scanning side of the gateway: the sighting source run until the gateway stops, and what it says of its
/// adapter published when it is news.
extension GatewayRuntime {
    /// The scanning side: runs the source, reporting adapter states, until cancelled; after a failure it waits with
    /// exponential backoff (1 s … 30 s) and tries again, so a missing adapter is a published state, not a crash loop.
    /// Returns at the end of a replayed capture: the gateway then stops as on SIGTERM, once, with every report of
    /// the file through.
    func scan() async {
        var delay: Duration = .seconds(1)
        while !Task.isCancelled {
            do {
                try await source.run(
                    adapter: { [self] report in adapterChanged(report) },
                    sighting: { [self] s in observe(s) })
                delay = .seconds(1)
            } catch is CancellationError {
                break
            } catch let stop as HCISightingSource.SourceStopped where stop.kind == .endOfCapture {
                let c = source.counters
                logger.notice(
                    "\(configuration.adapter.device): end of the capture: \(c.reports) reports, \(c.dropped.total) dropped; stopping"
                )
                if let damage = stop.damage { logger.warning("\(damage)") }
                return
            } catch {
                logger.error("adapter \(configuration.adapter.device): \(error)")
                let current = state.withLock { $0.adapters.current }
                if current == nil || current?.state == .poweredOn {
                    adapterChanged(
                        AdapterReport(
                            state: .unknown, device: configuration.adapter.device,
                            mode: configuration.adapter.mode, reason: "\(error)"))
                }
            }
            if Task.isCancelled { break }
            try? await clock.sleep(for: delay)
            delay = min(delay * 2, .seconds(30))
        }
    }

    /// An adapter report from the source: published when it is news (`AdapterStates`); scanning again, the
    /// pipeline's ranging and regions resume.
    func adapterChanged(_ report: AdapterReport) {
        let now = clock.unixTime()
        if report.scope == .gateway, let address = report.address { esphome?.controllerAddress(address) }
        guard let change = state.withLock({ $0.adapters.record(report, at: now) }) else { return }
        if change.scanningAgain {
            let at = clock.now()
            let (events, wake) = pipeline.withLock { p in (p.adapterScanning(at: at), p.restEnded()) }
            if wake { tickerWake.signal() }
            publish(events)
        }
        // The adapter's supervisor logged the state already (once per adapter); a capture's states are its own.
        if report.scope == .gateway {
            logger.debug("adapter \(report.device): \(report.state)\(report.reason.map { " (\($0))" } ?? "")")
        }
        recordState(readings.adapter(report, since: change.since, ts: now, synced: clockSynchronized()))
    }
}
