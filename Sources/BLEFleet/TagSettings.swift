import Foundation

/// One tag's own settings (`tags:` in a site description): a badge is not a pallet, and a phone is not a beacon.
///
/// ```yaml
/// tags:
///   - beacon: ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-100-1
///     name: Alice's badge       # the tracker's name in Home Assistant
///     person: true              # rooms count people: when any tag is one, only those
///     rssi_at_1m: -62           # phones advertise no calibration: distances from the RSSI with this
///     dwell_s: 2                # any of dwell_s, still_dwell_s, settle_s, settled_dwell_s: this tag's own
///     ignore_gateways: [gw-lab] # readings of this tag from these gateways are left out (counted)
/// ```
public struct TagSettings: Sendable, Equatable {
    public var beacon: String
    public var name: String?
    /// A person's tag (a badge, a phone, a watch). When a site names any, room occupancy counts only those: a sensor
    /// on a shelf and a neighbour's beacon are not someone in the room.
    public var person = false
    /// This tag's RSSI at 1 m, in dBm: its distances are worked out again from each reading's RSSI with it (and the
    /// site's `presence.path_loss_exponent`), instead of the calibration the gateways assumed for it.
    public var rssiAt1m: Double?
    public var dwellS: Double?
    public var stillDwellS: Double?
    public var settleS: Double?
    public var settledDwellS: Double?
    /// Gateways whose readings of this tag are left out (a gateway behind glass that hears it from the next room).
    public var ignoreGateways: Set<String> = []

    public init(beacon: String) { self.beacon = beacon }

    /// The site's presence settings with this tag's own in place.
    public func applied(to settings: PresenceSettings) -> PresenceSettings {
        var s = settings
        if let v = dwellS { s.dwellS = v }
        if let v = stillDwellS { s.stillDwellS = v }
        if let v = settleS { s.settleS = v }
        if let v = settledDwellS { s.settledDwellS = v }
        return s
    }

    /// The distance for a reading's RSSI with this tag's calibration (log-distance path loss), or nil without one.
    public func distance(rssi: Double, pathLossExponent n: Double) -> Double? {
        guard let r1 = rssiAt1m, rssi.isFinite else { return nil }
        return pow(10, (r1 - rssi) / (10 * n))
    }

    static let keys: Set<String> = [
        "beacon", "name", "person", "rssi_at_1m", "dwell_s", "still_dwell_s", "settle_s", "settled_dwell_s",
        "ignore_gateways",
    ]

    /// `tags:`, each checked against the site's gateways; every error names its path.
    static func parse(_ node: Any?, _ path: String, gateways: Set<String>) throws -> [String: TagSettings] {
        guard let node else { return [:] }
        var out: [String: TagSettings] = [:]
        for (i, t) in try SiteDescription.list(node, path).enumerated() {
            let p = "\(path)[\(i)]"
            let m = try SiteDescription.mapping(t, p, keys: keys)
            var s = TagSettings(beacon: try SiteDescription.id(m["beacon"], "\(p).beacon"))
            guard out[s.beacon] == nil else {
                throw SiteDescription.Problem(path: "\(p).beacon", reason: "tag \"\(s.beacon)\" is listed twice")
            }
            s.name = try SiteDescription.string(m["name"], "\(p).name")
            if let v = m["person"] {
                guard let b = v as? Bool else {
                    throw SiteDescription.Problem(path: "\(p).person", reason: "expected true or false")
                }
                s.person = b
            }
            if let r = try SiteDescription.number(m["rssi_at_1m"], "\(p).rssi_at_1m") {
                guard (-120...0).contains(r) else {
                    throw SiteDescription.Problem(path: "\(p).rssi_at_1m", reason: "expected dBm from -120 to 0")
                }
                s.rssiAt1m = r
            }
            func seconds(_ key: String) throws -> Double? {
                guard let d = try SiteDescription.number(m[key], "\(p).\(key)") else { return nil }
                guard d >= 0 else {
                    throw SiteDescription.Problem(path: "\(p).\(key)", reason: "expected a number ≥ 0")
                }
                return d
            }
            s.dwellS = try seconds("dwell_s")
            s.stillDwellS = try seconds("still_dwell_s")
            s.settleS = try seconds("settle_s")
            s.settledDwellS = try seconds("settled_dwell_s")
            if let v = m["ignore_gateways"] {
                for (j, g) in try SiteDescription.list(v, "\(p).ignore_gateways").enumerated() {
                    let id = try SiteDescription.id(g, "\(p).ignore_gateways[\(j)]")
                    guard gateways.contains(id) else {
                        throw SiteDescription.Problem(
                            path: "\(p).ignore_gateways[\(j)]", reason: "no gateway \"\(id)\" in gateways")
                    }
                    s.ignoreGateways.insert(id)
                }
            }
            out[s.beacon] = s
        }
        return out
    }
}
