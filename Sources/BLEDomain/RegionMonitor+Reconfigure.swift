extension RegionMonitor {
    /// The monitor for a new set of regions (a configuration change), keeping what is known: a region whose
    /// definition is unchanged (same id, identity, thresholds and timings) keeps its state and history; a new or
    /// changed one starts `unknown` at `now`, as at start. The transition count starts again from zero.
    public func reconfigured(to regions: [Region], at now: Duration) -> RegionMonitor {
        var m = RegionMonitor(regions: regions, at: now)
        for i in m.entries.indices {
            if let kept = entries.first(where: { $0.region == m.entries[i].region }) { m.entries[i] = kept }
        }
        return m
    }
}
