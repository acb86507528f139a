import BLEDomain
import BLEPublishing

/// Sightings through the pipeline, and what it makes at each ranging interval's end: region changes recorded as
/// retained states, beacon summaries, raw and sensor readings appended to the spool.
extension GatewayRuntime {
    /// One sighting: seen by the peripheral links and the tracer, then through the pipeline; what it makes goes to
    /// the spool (region changes durably, before they are published).
    func observe(_ s: Sighting) {
        traceIfTraced(s)
        // Home Assistant's Bluetooth stack gets every advertisement, as from an ESP32 proxy: before any filter.
        esphome?.advertise(s)
        // Before the scan filter: a wanted peripheral need not be a beacon anyone publishes.
        peripherals.observe(s)
        let now = clock.now()
        var sensor: SensorReading?
        let (out, wake) = pipeline.withLock { p in (p.observe(s, at: now, sensor: &sensor), p.restEnded()) }
        if wake { tickerWake.signal() }
        publish(out.regionEvents)
        if out.raw { _ = spool.append(readings.raw(s, synced: clockSynchronized())) }
        if let r = sensor {
            _ = spool.append(
                readings.sensor(r, address: s.address, rssi: s.rssi, ts: s.timestamp, synced: clockSynchronized()))
            announceSensorToHomeAssistant(s.address, model: r.model.description, keys: GatewayReadings.valueKeys(r))
        }
    }

    func flushIntervals() {
        let now = clock.now()
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        let scanning = state.withLock { $0.adapters.scanning }
        let end = pipeline.withLock { $0.tick(at: now, scanning: scanning) }
        publish(end.regionEvents)
        let (interval, ranging) = inForce.withLock { ($0.publishing.rangingIntervalSeconds, $0.ranging) }
        let filter = GatewayReadings.filterDescription(ranging)
        for u in end.updates {
            _ = spool.append(
                readings.beacon(
                    u, interval: interval, filter: filter, telemetry: end.telemetry[u.address],
                    ts: ts, synced: synced))
        }
    }

    /// Region events as retained state readings: a `determined` change, with the enter or exit it makes if any.
    func publish(_ events: [RegionEvent]) {
        guard !events.isEmpty else { return }
        let now = clock.now()
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        for (e, regionState, change) in SightingPipeline.regionChanges(events) {
            recordState(
                readings.region(
                    e.region, state: regionState, since: ts - (now - e.time).seconds, event: change,
                    beacon: e.identity, ts: ts, synced: synced))
        }
    }
}
