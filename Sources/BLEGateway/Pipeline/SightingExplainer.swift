import BLEConfiguration
import BLEDomain
import BLEHCI

/// Why a device is, or is not, published: each stage `GatewayRuntime.observe` puts a sighting through, in the
/// runtime's order, with the configuration in force — decoding, the scan filter, identity resolution, ranging and
/// its once-per-interval summary, regions, the raw stream and its rate limit, peripheral intents. For
/// `blegateway explain ADDRESS` and `run --trace ADDRESS`. A pure value: it does no I/O and keeps only the state the
/// runtime's own rate limits keep (the raw stream's token bucket, the last summary interval per identity).
public struct SightingExplainer: Sendable {
    public struct Step: Sendable, Equatable, CustomStringConvertible {
        public var stage: String
        /// Whether the sighting goes on past this stage (false: this is why it is not published).
        public var passes: Bool
        public var detail: String
        public var description: String { "\(stage): \(passes ? "" : "STOPS HERE — ")\(detail)" }
    }

    public let configuration: GatewayConfiguration
    let filter: ScanFilter
    var resolver: PrivateAddressResolver
    /// The raw stream's token bucket, as the runtime's pipeline keeps it.
    var raw = RawRateBucket()

    public init(configuration: GatewayConfiguration) throws {
        self.configuration = configuration
        filter = try ScanFilter(parsing: configuration.scan.filters)
        resolver = PrivateAddressResolver(keys: configuration.identityKeys)
    }

    /// The stages for one sighting heard at `now` (seconds, any origin: only differences are used).
    public mutating func explain(_ s: Sighting, at now: Double) -> [Step] {
        var steps: [Step] = []
        let ad = s.advertisement
        var heard = "RSSI \(s.rssi.map { "\($0) dBm" } ?? "not available (127)")"
        heard += s.isScanResponse ? ", scan response" : s.isConnectable ? ", connectable" : ", not connectable"
        if let name = ad.nameBytes { heard += ", name \"\(String(decoding: name, as: UTF8.self))\"" }
        heard += ", \(ad.data.count) bytes of AD"
        if let b = ad.beacon {
            heard += ", a beacon frame: \(b.kind)"
        } else {
            heard += ", no beacon frame"
        }
        if !ad.issues.isEmpty { heard += "; decoding met \(ad.issues) (what could be read is used)" }
        steps.append(Step(stage: "heard", passes: true, detail: heard))

        if let why = filter.rejection(s) {
            steps.append(Step(stage: "scan filter", passes: false, detail: "scan.filters \(why)"))
            return steps + peripheralSteps(s)
        }
        steps.append(
            Step(
                stage: "scan filter", passes: true,
                detail: filter.isEmpty
                    ? "no scan.filters: everything passes" : "passes scan.filters \(configuration.scan.filters)"))

        let identity = resolver.identity(of: s)
        var who = "published as …/beacons/\(identity.id) (kind \(GatewayReadings.kind(of: identity)))"
        if case .address(let a) = identity, a != s.address {
            who += "; a resolvable private address, resolved by identity_keys to \(a)"
        } else if case .address = identity, ad.beacon != nil {
            who += "; its frame has no stable identity, so it is ranged by address"
        }
        steps.append(Step(stage: "identity", passes: true, detail: who))

        let interval = configuration.publishing.rangingIntervalSeconds
        var ranging =
            "counted into one summary per \(interval) s (publishing.ranging_interval_s), not one message "
            + "per advertisement"
        if s.rssi == nil { ranging += "; without an RSSI it counts as a sample but moves no distance" }
        steps.append(Step(stage: "ranging", passes: true, detail: ranging))

        let name = ad.nameBytes
        for region in configuration.regions where region.matcher.matches(identity, name: name) {
            var d = "region \(region.id) matches"
            if let enter = region.enterRSSI {
                // The runtime compares the ranging filter's RSSI, not this reading's; the reading says which side.
                d += "; it enters at filtered RSSI ≥ \(enter) dBm (this reading: \(s.rssi.map { "\($0)" } ?? "none"))"
            }
            steps.append(Step(stage: "regions", passes: true, detail: d))
        }

        let publishing = configuration.publishing
        if !publishing.rawAdvertisements {
            steps.append(
                Step(
                    stage: "raw stream", passes: true,
                    detail: "not on …/raw/ (publishing.raw_advertisements is false)"))
        } else {
            let rate = publishing.rawMaxPerSecond
            if raw.take(rate: rate, at: .seconds(now)) {
                steps.append(
                    Step(
                        stage: "raw stream", passes: true,
                        detail: "on …/raw/\(s.address.topicComponent) (within raw_max_per_s \(rate))"))
            } else {
                steps.append(
                    Step(
                        stage: "raw stream", passes: true,
                        detail: "not on …/raw/ this time: over publishing.raw_max_per_s \(rate) "
                            + "(shared by every device; the summary still counts it)"))
            }
        }
        return steps + peripheralSteps(s)
    }

    /// Peripheral intents see every sighting, before the scan filter (a wanted peripheral need not be a beacon).
    func peripheralSteps(_ s: Sighting) -> [Step] {
        configuration.peripherals.filter { $0.matches(s) }.map { p in
            Step(
                stage: "peripherals", passes: true,
                detail: "wanted by peripherals entry \(p.name ?? "\(p.match)")"
                    + (s.isConnectable
                        ? ": the gateway connects to it (connections.max \(configuration.connections.max))"
                        : ", but this advertisement is not connectable"))
        }
    }
}
