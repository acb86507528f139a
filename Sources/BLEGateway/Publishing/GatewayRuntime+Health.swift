import BLEPublishing

/// What the health topic reports: one snapshot of every part's counters, taken when the schedule says a report is
/// due (`TickSchedule`). Each count is read where it is kept; nothing here counts.
extension GatewayRuntime {
    func health(
        uptime: Duration, publish: SpoolPublisher.Statistics, counters: SightingSourceCounters, publishRate: Double,
        reportRate: Double
    ) -> GatewayReadings.Health {
        let reconnects = state.withLock { $0.reconnects }
        let (sensors, rateLimited, telemetryDiscarded, tracked, evicted, identity, regions) = pipeline.withLock { p in
            let ids = p.regions.regions.map(\.id)
            return (
                (gate: p.sensorGate.statistics, tracked: p.sensorGate.trackedCount), p.raw.limited,
                p.telemetryDiscarded, p.ranging.trackedCount, p.ranging.statistics.evictions,
                configuration.identityKeys.isEmpty
                    ? nil : (p.resolver.resolutions, p.resolver.hashComputations, p.resolver.cacheResets),
                ids.isEmpty ? nil : (ids.count, ids.filter { p.regions.state(of: $0) == .inside }.count)
            )
        }
        let lifecycle = source as? any AdapterLifecycleReporting
        return GatewayReadings.Health(
            uptime: uptime.seconds, spool: spool.statistics, publish: publish,
            unretained: client.unretainedPublishes,
            // MQTT 5 says why a publish was refused; under 3.1.1 the own-status echo is the only witness.
            deniedSuspected: configuration.mqtt.protocolVersion == 5 ? nil : state.withLock { $0.echo.suspected },
            deniedSuspectedFamilies: configuration.mqtt.protocolVersion == 5
                ? nil : publishEcho.withLock { $0.suspected },
            publishRate: publishRate,
            reconnects: reconnects, broker: client.broker?.description, failovers: client.failovers,
            reports: counters.reports, reportRate: reportRate,
            malformedEvents: counters.malformedEvents, dropped: counters.dropped,
            reassembly: counters.reassembly, rawRateLimited: rateLimited,
            telemetryDiscarded: telemetryDiscarded, droppedDeliveries: client.droppedDeliveries,
            trackedBeacons: tracked, evictedBeacons: evicted, residentBytes: SystemFacts.residentBytes(),
            adapter: lifecycle?.lifecycleStatistics, adapterSlots: lifecycle?.adapterSlots,
            peripherals: configuration.peripherals.isEmpty && inForce.withLock({ $0.peripherals.isEmpty })
                ? nil : peripherals.statistics,
            identity: identity, regions: regions, homeAssistant: homeAssistantCounts,
            sensors: configuration.sensors.enabled ? sensors : nil, esphome: esphome?.statistics)
    }
}
