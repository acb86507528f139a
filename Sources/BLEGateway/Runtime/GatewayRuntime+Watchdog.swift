import BLEDomain

/// The service manager's watchdog (systemd `WatchdogSec=`), fed from the tick loop every half interval while the
/// publisher and the scanner make progress (`Liveness`): a wedged part stops the feeding and systemd restarts the
/// gateway; the tick loop itself being stuck does too.
extension GatewayRuntime {
    struct Watchdog {
        var liveness: Liveness
        let every: Duration
        var next: Duration
        /// The stall being reported (logged once), if any.
        var stalled: Liveness.Part?
    }

    func makeWatchdog() -> Watchdog? {
        guard let interval = notifier.watchdogInterval else { return nil }
        // A silent radio is the recovery ladder's; the scanner is judged by whether the ladder keeps its own deadlines.
        return Watchdog(
            liveness: Liveness(publisherLimit: interval, scannerLimit: interval),
            every: interval / 2, next: clock.now(), stalled: nil)
    }

    func feedWatchdog(_ w: inout Watchdog?, now: Duration) {
        guard var dog = w, now >= dog.next else { return }
        dog.next = now + dog.every
        let p = publisher.statistics
        let sample = Liveness.Sample(
            acknowledged: p.acknowledged, pending: spool.statistics.depth, connected: p.connected,
            holdingBack: p.refusal != nil, ladders: (source as? any AdapterLifecycleReporting)?.ladders ?? [])
        switch dog.liveness.observe(sample, at: now) {
        case .alive:
            if let part = dog.stalled {
                logger.notice("watchdog: the \(part.rawValue) makes progress again")
                dog.stalled = nil
            }
            notifier.notify("WATCHDOG=1\nSTATUS=running")
        case .stalled(let part, let since):
            if dog.stalled != part {
                let text =
                    "watchdog: the \(part.rawValue) has made no progress for \(Int((now - since).seconds)) s; "
                    + "the service manager's watchdog is no longer fed and will restart the gateway"
                logger.error("\(text)")
                dog.stalled = part
            }
            notifier.notify("STATUS=\(part.rawValue) stalled")
        }
        w = dog
    }
}
