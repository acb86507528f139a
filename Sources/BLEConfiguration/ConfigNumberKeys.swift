/// A section of number-valued keys (`connections:`, `ranging:`) as a table: each key's name, range and field, read
/// the same way by the local YAML reader and the remote JSON reader, so a range is written once.
package struct ConfigNumberKey<Section>: Sendable {
    package let name: String
    package let range: ClosedRange<Double>
    /// A whole number (`max: 4`), else any number in range.
    package let whole: Bool
    package let get: @Sendable (Section) -> Double
    package let set: @Sendable (inout Section, Double) -> Void

    package init(
        _ name: String, _ range: ClosedRange<Double>, whole: Bool = false,
        get: @escaping @Sendable (Section) -> Double, set: @escaping @Sendable (inout Section, Double) -> Void
    ) {
        self.name = name
        self.range = range
        self.whole = whole
        self.get = get
        self.set = set
    }
}

extension GatewayConfiguration.Connections {
    static let keys: [ConfigNumberKey<Self>] = [
        .init("max", 1...64, whole: true, get: { Double($0.max) }, set: { $0.max = Int($1) }),
        .init(
            "connect_timeout_s", 0.5...300, get: { $0.connectTimeoutSeconds }, set: { $0.connectTimeoutSeconds = $1 }),
        .init("rssi_interval_s", 0...3600, get: { $0.rssiIntervalSeconds }, set: { $0.rssiIntervalSeconds = $1 }),
        .init("max_backoff_s", 1...3600, get: { $0.maxBackoffSeconds }, set: { $0.maxBackoffSeconds = $1 }),
        .init("att_timeout_s", 1...30, get: { $0.attTimeoutSeconds }, set: { $0.attTimeoutSeconds = $1 }),
        .init("owner_lease_s", 0...3600, get: { $0.ownerLeaseSeconds }, set: { $0.ownerLeaseSeconds = $1 }),
        .init("owner_margin_db", 0...40, get: { $0.ownerMarginDB }, set: { $0.ownerMarginDB = $1 }),
        .init("max_matched", 1...10_000, whole: true, get: { Double($0.maxMatched) }, set: { $0.maxMatched = Int($1) }),
    ]
}

extension GatewayConfiguration.Ranging {
    package static let keys: [ConfigNumberKey<Self>] = [
        .init("path_loss_exponent", 1...6, get: { $0.pathLossExponent }, set: { $0.pathLossExponent = $1 }),
        .init("rssi_at_1m", -100 ... -20, get: { $0.rssiAt1m }, set: { $0.rssiAt1m = $1 }),
        .init("rssi_offset_db", -30...30, get: { $0.rssiOffsetDB }, set: { $0.rssiOffsetDB = $1 }),
        .init("immediate_below_m", 0.05...100, get: { $0.immediateBelowMeters }, set: { $0.immediateBelowMeters = $1 }),
        .init("near_below_m", 0.1...1000, get: { $0.nearBelowMeters }, set: { $0.nearBelowMeters = $1 }),
        .init("proximity_hysteresis", 0...0.9, get: { $0.proximityHysteresis }, set: { $0.proximityHysteresis = $1 }),
        .init("unknown_after_s", 0.5...3600, get: { $0.unknownAfterSeconds }, set: { $0.unknownAfterSeconds = $1 }),
        .init("forget_after_s", 1...86400, get: { $0.forgetAfterSeconds }, set: { $0.forgetAfterSeconds = $1 }),
        .init("filter_sigma_db", 0.5...20, get: { $0.filterSigmaDB }, set: { $0.filterSigmaDB = $1 }),
        .init(
            "filter_quiet_acceleration", 0...1,
            get: { $0.filterQuietAcceleration }, set: { $0.filterQuietAcceleration = $1 }),
        .init(
            "filter_maneuver_acceleration", 0...100,
            get: { $0.filterManeuverAcceleration }, set: { $0.filterManeuverAcceleration = $1 }),
        .init(
            "filter_maneuver_threshold", 0.01...10,
            get: { $0.filterManeuverThreshold }, set: { $0.filterManeuverThreshold = $1 }),
        .init(
            "filter_innovation_smoothing", 0.01...1,
            get: { $0.filterInnovationSmoothing }, set: { $0.filterInnovationSmoothing = $1 }),
        .init(
            "max_speed_mps", 0.1...100, get: { $0.maxSpeedMetersPerSecond }, set: { $0.maxSpeedMetersPerSecond = $1 }),
    ]

    /// The rule that spans keys, checked on the file and on the merged remote layers alike: the key to blame and why.
    package var problem: (key: String, reason: String)? {
        if nearBelowMeters <= immediateBelowMeters {
            return (
                "near_below_m",
                "near_below_m (\(nearBelowMeters)) must be above immediate_below_m "
                    + "(\(immediateBelowMeters))"
            )
        }
        if forgetAfterSeconds <= unknownAfterSeconds {
            return (
                "forget_after_s",
                "forget_after_s (\(forgetAfterSeconds)) must be above unknown_after_s "
                    + "(\(unknownAfterSeconds))"
            )
        }
        return nil
    }
}
