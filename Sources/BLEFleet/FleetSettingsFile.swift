import Foundation

/// The `fleet:` section of a YAML file (the gateway's own file, or one of its own), in the gateway's YAML style:
///
/// ```yaml
/// fleet:
///   broker: mqtt://127.0.0.1:1883   # or a cluster's nodes: brokers: [mqtt://n1:1883, mqtt://n2:1883]
///   prefix: blegateway            # or several sites at once:
///   # sites: [acme/site-a, acme/site-b]
///   listen: 127.0.0.1:8080
///   history: /var/lib/blegateway/fleet-history.sqlite
///   history_retention_h: 168      # the last hour at 10 s, then one point a minute (least, mean, greatest)
///   beacon_timeout_s: 300
///   site: /etc/blegateway/site.yaml   # or the description itself, inline (docs/PRESENCE.md)
///   homeassistant: {discovery_prefix: homeassistant}   # tracked tags as device trackers
///   username_file: /etc/blegateway/fleet-credentials/username   # the broker's user blegateway-fleet
///   password_file: /etc/blegateway/fleet-credentials/password
///   instance: fleet-a     # two instances for one site: one name each (default: the host's name)
///   lease_s: 15           # the standby takes over within this after the active one stops
/// ```
/// Without `fleet.broker`/`fleet.prefix`, the file's `mqtt.broker`/`mqtt.prefix` apply, so a gateway's file can
/// serve both (its `mqtt.username_file` does not: the fleet service is a user of its own in the shipped ACL). Unknown keys are errors, named by path, as in the gateway's configuration.
public struct FleetSettingsFile: Sendable, Equatable {
    /// One broker, or a cluster's nodes comma-separated (`fleet.brokers`, or the gateway's `mqtt.brokers`).
    public var broker: String?
    public var prefix: String?
    /// `fleet.sites`: several prefixes followed by one service (instead of `prefix`).
    public var sites: [String]?
    public var listen: String?
    public var history: String?
    /// `fleet.history_retention_h`, in seconds.
    public var historyRetentionS: Double?
    public var beaconTimeoutS: Double?
    /// `fleet.site`: the first site's description (read from its file when given as a path).
    public var site: SiteDescription?
    /// `fleet.homeassistant.discovery_prefix`.
    public var homeAssistantDiscoveryPrefix: String?
    /// `fleet.username_file` / `fleet.password_file`: files holding the broker user's name and password.
    public var usernameFile: String?
    public var passwordFile: String?
    /// `mqtt.protocol` (3 or 5), as the gateway's file has it: a cluster such as NATS speaks only 3.1.1.
    public var protocolVersion: Int?
    /// `fleet.instance`: this instance's name on the site's lease.
    public var instance: String?
    /// `fleet.lease_s`.
    public var leaseS: Double?

    public struct Problem: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    static let keys: Set<String> = [
        "broker", "brokers", "prefix", "sites", "listen", "history", "beacon_timeout_s", "site", "homeassistant",
        "username_file", "password_file", "instance", "lease_s", "history_retention_h",
    ]

    public init() {}

    public init(yaml text: String, file: String = "fleet configuration") throws {
        let tree: Any?
        do {
            tree = try YAMLTree.load(text, path: file)
        } catch let f as YAMLTree.Failure {
            throw Problem(path: f.path, reason: f.reason)
        }
        guard let root = tree as? [String: Any] else {
            throw Problem(path: file, reason: "expected a mapping at the top level")
        }
        let mqtt = root["mqtt"] as? [String: Any] ?? [:]
        broker = mqtt["broker"] as? String ?? (mqtt["brokers"] as? [String])?.joined(separator: ",")
        prefix = mqtt["prefix"] as? String
        if let v = mqtt["protocol"] {
            guard let n = v as? Int, [3, 4, 5].contains(n) else {
                throw Problem(path: "mqtt.protocol", reason: "expected 3 (3.1.1) or 5")
            }
            protocolVersion = n == 4 ? 3 : n
        }
        guard let fleet = root["fleet"] else { return }
        guard let section = fleet as? [String: Any] else { throw Problem(path: "fleet", reason: "expected a mapping") }
        for key in section.keys where !Self.keys.contains(key) {
            throw Problem(path: "fleet.\(key)", reason: "unknown key")
        }
        func string(_ key: String) throws -> String? {
            guard let v = section[key] else { return nil }
            guard let s = v as? String else { throw Problem(path: "fleet.\(key)", reason: "expected a string") }
            return s
        }
        if let v = section["brokers"] {
            guard let list = v as? [Any], !list.isEmpty, list.allSatisfy({ $0 is String }) else {
                throw Problem(path: "fleet.brokers", reason: "expected a list of mqtt://HOST:PORT")
            }
            if section["broker"] != nil {
                throw Problem(path: "fleet.brokers", reason: "give broker or brokers, not both")
            }
            broker = list.map { $0 as! String }.joined(separator: ",")
        }
        broker = try string("broker") ?? broker
        prefix = try string("prefix") ?? prefix
        if let v = section["sites"] {
            guard let list = v as? [Any], !list.isEmpty, list.allSatisfy({ $0 is String }) else {
                throw Problem(path: "fleet.sites", reason: "expected a list of topic prefixes")
            }
            if section["prefix"] != nil { throw Problem(path: "fleet.sites", reason: "give prefix or sites, not both") }
            let strings = list.map { $0 as! String }
            if let problem = FleetConfiguration.problem(sites: strings) {
                throw Problem(path: "fleet.sites", reason: problem)
            }
            sites = strings
        }
        listen = try string("listen")
        usernameFile = try string("username_file")
        passwordFile = try string("password_file")
        if passwordFile != nil, usernameFile == nil {
            throw Problem(path: "fleet.password_file", reason: "needs fleet.username_file")
        }
        history = try string("history")
        if let v = section["history_retention_h"] {
            let range = FleetHistory.retentionRange
            guard let h = (v as? Double) ?? (v as? Int).map(Double.init), range.contains(h * 3600) else {
                throw Problem(
                    path: "fleet.history_retention_h",
                    reason: "expected hours from \(Int(range.lowerBound / 3600)) to \(Int(range.upperBound / 3600))")
            }
            historyRetentionS = h * 3600
        }
        instance = try string("instance")
        if let i = instance, let problem = FleetConfiguration.problem(instance: i) {
            throw Problem(path: "fleet.instance", reason: problem)
        }
        if let v = section["lease_s"] {
            // Renewed every third of it, fenced at three quarters: below 3 s the renewals would crowd the fence.
            guard let d = (v as? Double) ?? (v as? Int).map(Double.init), d >= 3, d <= 3600 else {
                throw Problem(path: "fleet.lease_s", reason: "expected a number of seconds from 3 to 3600")
            }
            leaseS = d
        }
        if let v = section["beacon_timeout_s"] {
            guard let d = (v as? Double) ?? (v as? Int).map(Double.init), d > 0 else {
                throw Problem(path: "fleet.beacon_timeout_s", reason: "expected a positive number of seconds")
            }
            beaconTimeoutS = d
        }
        if let v = section["site"] {
            if let path = v as? String {
                // Relative to the configuration file, as an operator reads it.
                let base = (file as NSString).deletingLastPathComponent
                let full = path.hasPrefix("/") || base.isEmpty ? path : (base as NSString).appendingPathComponent(path)
                guard let text = try? String(contentsOfFile: full, encoding: .utf8) else {
                    throw Problem(path: "fleet.site", reason: "cannot read \(full)")
                }
                site = try SiteDescription(text: text, path: full)
            } else {
                site = try SiteDescription(node: v, path: "fleet.site")
            }
        }
        if let v = section["homeassistant"] {
            guard let m = v as? [String: Any] else {
                throw Problem(path: "fleet.homeassistant", reason: "expected a mapping")
            }
            for key in m.keys where key != "discovery_prefix" {
                throw Problem(path: "fleet.homeassistant.\(key)", reason: "unknown key; expected discovery_prefix")
            }
            guard let p = m["discovery_prefix"] as? String, FleetConfiguration.problem(sites: [p]) == nil else {
                throw Problem(path: "fleet.homeassistant.discovery_prefix", reason: "expected a topic prefix")
            }
            homeAssistantDiscoveryPrefix = p
        }
    }

    /// `HOST:PORT`, `[V6]:PORT` or `:PORT` (all interfaces).
    public static func parseListen(_ s: String) throws -> (host: String, port: Int) {
        guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (0...65535).contains(port)
        else { throw Problem(path: "fleet.listen", reason: "\"\(s)\": expected HOST:PORT") }
        var host = String(s[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }
}
