import BLEPublishing
import Foundation

/// The fleet service's settings (the `fleet:` section of a YAML file, or command-line options).
public struct FleetConfiguration: Sendable {
    /// How to reach the broker the gateways publish to; the service only subscribes.
    public var mqtt: MQTTConfiguration
    /// The broker as the operator wrote it, for the pages (never credentials).
    public var brokerURL: String
    /// The sites followed: each the topic prefix its gateways publish under (`mqtt.prefix` in their configuration).
    /// One service may follow several; gateway ids must then differ between them (docs/FLEET.md).
    public var sites: [String]
    /// The first site.
    public var prefix: String { sites[0] }
    /// Address and port the dashboard listens on.
    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// SQLite file for the plots' history; nil keeps no history (plots start empty).
    public var historyPath: String?
    /// How long the history keeps its per-minute points (`fleet.history_retention_h`); the last hour is kept whole.
    public var historyRetentionS = FleetHistory.defaultRetentionS
    /// Beacons not reported by any gateway for this long leave the model.
    public var beaconTimeoutS = 300.0
    /// Received messages held while the model is busy. Gateways publish on the same second, so a fleet arrives in
    /// bursts: 1,000 gateways × 50 beacons is 50,000 messages at once. Beyond this the oldest are dropped, counted
    /// and shown (about 300 bytes each held).
    public var receiveBuffer = 131_072
    /// The first site's description, for room presence (docs/PRESENCE.md); nil waits for one pushed retained on
    /// `<prefix>/fleet/site`.
    public var site: SiteDescription?
    /// With a value, each tracked tag is announced to Home Assistant under this discovery prefix as a
    /// `device_tracker` (docs/HOMEASSISTANT.md, "Presence").
    public var homeAssistantDiscoveryPrefix: String?
    /// This instance's name on the first site's lease (`fleet.instance`, default the host's name): two instances for
    /// one site need two names, and a restarted instance knows its own retained claim by it (FleetLease).
    public var instance = ProcessInfo.processInfo.hostName
    /// The lease's timing (`fleet.lease_s`; renewal and fence follow from it).
    public var lease = FleetLease.Settings()

    public init(mqtt: MQTTConfiguration, brokerURL: String, prefix: String) {
        self.init(mqtt: mqtt, brokerURL: brokerURL, sites: [prefix])
    }

    public init(mqtt: MQTTConfiguration, brokerURL: String, sites: [String]) {
        precondition(!sites.isEmpty, "a fleet service follows at least one site")
        self.mqtt = mqtt
        self.brokerURL = brokerURL
        self.sites = sites
    }

    /// Why `name` cannot name an instance on the lease, or nil: it is written into the claim and the log lines, so
    /// it is one printable word.
    public static func problem(instance name: String) -> String? {
        name.isEmpty || name.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 })
            ? "expected a name without spaces" : nil
    }

    /// Why `sites` cannot be followed together, or nil: each must be a valid topic prefix, and none may contain
    /// another (`acme` and `acme/site-a` would see the same topics twice).
    public static func problem(sites: [String]) -> String? {
        if sites.isEmpty { return "give at least one site" }
        for s in sites {
            if s.isEmpty || s.hasPrefix("/") || s.hasSuffix("/") || s.contains("//")
                || s.contains(where: { "+#\0".contains($0) })
            {
                return "\"\(s)\" is not a topic prefix (levels separated by '/', no wildcards)"
            }
        }
        for a in sites {
            for b in sites where a != b && (b + "/").hasPrefix(a + "/") {
                return "site \"\(b)\" is inside site \"\(a)\""
            }
        }
        if Set(sites).count != sites.count { return "a site is listed twice" }
        return nil
    }
}
