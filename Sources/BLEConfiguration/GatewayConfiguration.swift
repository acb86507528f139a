import BLEDomain
import BLEHCI
import BLETransport

/// The gateway's configuration: nested `Sendable` structs, every field with its default.
/// `config/gateway.yaml` shows every key; docs/CONFIG.md documents them.
public struct GatewayConfiguration: Sendable, Equatable {
    public struct Gateway: Sendable, Equatable {
        public init() {}

        /// This gateway's id in topics: one level of `[A-Za-z0-9._-]`. Local only.
        public var id = "gateway"
    }

    public struct Adapter: Sendable, Equatable {
        public init() {}

        /// `hci0`, `unix:PATH`, `tcp:HOST:PORT`, `serial:/dev/ttyX[@BAUD]` or `file:PATH`.
        public var device = "hci0"
        /// `exclusive` owns the controller (HCI_CHANNEL_USER); `shared` scans beside bluetoothd.
        public var mode = AdapterMode.exclusive
        /// Bind by address (`AA:BB:CC:DD:EE:FF`): a kernel adapter that comes back under another index is followed.
        public var address: String?
        /// A second adapter (exclusive mode): it makes the peripheral connections while `device` scans; when one is
        /// not usable the other carries both, until it has been back for `handback_s`.
        public var secondDevice: String?
        public var secondAddress: String?
        public var handbackSeconds = 10.0
        /// The recovery ladder (docs/ADAPTER.md): the silence watchdog, the longest wait between attempts, and the two
        /// steps that need policy.
        public var silenceTimeoutSeconds = 60.0
        public var maxBackoffSeconds = 30.0
        public var allowRfkillUnblock = false
        public var allowUSBReset = false

        /// The ladder's settings from these keys, over its defaults.
        public var lifecycle: AdapterLifecycle.Configuration {
            var l = AdapterLifecycle.Configuration()
            l.silenceTimeout = .milliseconds(Int64((silenceTimeoutSeconds * 1000).rounded()))
            l.maxBackoff = .milliseconds(Int64((maxBackoffSeconds * 1000).rounded()))
            l.allowRfkillUnblock = allowRfkillUnblock
            l.allowUSBReset = allowUSBReset
            return l
        }
    }

    public struct Scan: Sendable, Equatable {
        public init() {}

        /// Active scanning asks for scan responses (names); passive only listens.
        public var active = false
        /// LE scan interval and window in milliseconds (2.5 … 10240); window ≤ interval.
        public var intervalMS = 100.0
        public var windowMS = 100.0
        /// Filters as `kind:value` strings (docs/SCAN_JSON.md): `uuid:FEAA`, `name:Kitchen`, `company:0x004C`, `rssi:-80`, `addr:…`.
        public var filters: [String] = []
    }

    public struct TLS: Sendable, Equatable {
        public init() {}

        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        /// A file holding the key's passphrase (systemd LoadCredential fits); never the passphrase itself.
        public var keyPassphraseFile: String?
        public var verifyHostname = true
    }

    public struct MQTT: Sendable, Equatable {
        public init() {}

        /// `mqtt://HOST:PORT` or `mqtts://HOST:PORT` (TLS): the one-entry form of `brokers`.
        public var broker: String {
            get { brokers.first ?? "" }
            set { brokers = [newValue] }
        }
        /// The brokers to connect to, each `mqtt://HOST:PORT` or `mqtts://HOST:PORT`, all with the same scheme: one
        /// broker, or the nodes of a cluster. After a connection ends the next attempt goes to another (`failover`).
        public var brokers = ["mqtt://127.0.0.1:1883"]
        /// How the next broker is chosen: `in_order` (the next in the list, round and round) or `random` (any
        /// other; the first is drawn too, so a fleet spreads over the nodes).
        public var failover = Failover.inOrder
        /// Topic prefix: `/`-separated levels of `[A-Za-z0-9._-]`.
        public var prefix = "blegateway"
        /// Defaults to `blegateway-<gateway id>`: unique per gateway, as persistent sessions and clusters need.
        public var clientID: String?
        /// 3 (MQTT 3.1.1) or 5.
        public var protocolVersion = 5
        public var keepAliveSeconds = 30
        /// QoS for readings (0, 1 or 2); state topics always use at least 1.
        public var qos = 1
        /// Files holding the user name and password; never the secrets themselves.
        public var usernameFile: String?
        public var passwordFile: String?
        public var tls = TLS()
        public var reconnectMinSeconds = 1.0
        public var reconnectMaxSeconds = 60.0
        /// Messages handed to the MQTT library at once; the rest waits in the spool.
        public var inflight = 200
        /// MQTT 5 session expiry for persistent sessions (0 = clean session).
        public var sessionExpirySeconds = 3600
        /// The largest payload the broker takes, for brokers that cannot say so (MQTT 3.1.1: mosquitto acknowledges a
        /// publish over its `message_size_limit` and drops it). Larger readings go to the dead letters. 0: no limit
        /// but the broker's own (MQTT 5 announces it in its CONNACK).
        public var maxPayloadBytes = 0
    }

    /// How a gateway with several brokers chooses the next (mqtt.failover).
    public enum Failover: String, Sendable, Equatable, CaseIterable {
        case inOrder = "in_order"
        case random
    }

    public struct Spool: Sendable, Equatable {
        public init() {}

        /// The SQLite file of the durable outbox.
        public var path = "/var/lib/blegateway/spool.sqlite"
        public var maxMegabytes = 64.0
        /// Readings are committed together at most this often (≤ 100 ms), to spare SD cards.
        public var commitWindowMS = 100.0
        /// A peripheral's values (someone waits for them) are committed within this window instead (≤ the commit
        /// window): latency for them, batching for beacon samples.
        public var valueCommitWindowMS = 5.0
        /// Space held back beside the spool for states when something else fills the file system (0: none).
        public var reserveMegabytes = 1.0
    }

    public struct Publishing: Sendable, Equatable {
        public init() {}

        /// How often each beacon's ranging is published (seconds).
        public var rangingIntervalSeconds = 1.0
        public var healthIntervalSeconds = 30.0
        /// MQTT 5 message expiry for RSSI samples (seconds; 0 = none).
        public var sampleExpirySeconds = 300
        /// An optional rate-limited stream of raw advertisements.
        public var rawAdvertisements = false
        public var rawMaxPerSecond = 20.0
    }

    /// Sensor advertisements (`sensors:`, local only: the bindkeys are secrets, and a remote document is retained on
    /// the broker where every client allowed to read the config topic would see them).
    public struct Sensors: Sendable, Equatable {
        public init() {}

        /// Decode and publish sensor advertisements on `<prefix>/<gateway>/sensors/<address>`.
        public var enabled = true
        /// At most one reading per sensor this often (seconds; 0: every new packet).
        public var minIntervalSeconds = 1.0
        /// The same packet heard again within this window is a repeat, dropped and counted (seconds).
        public var repeatWindowSeconds = 10.0
        /// Per-device keys (BTHome v2 and Xiaomi MiBeacon v4/v5 bindkeys), 16 octets each, by address. Never logged.
        public var bindkeys: [BDAddress: [UInt8]] = [:]

        /// What the domain's gate takes.
        public var gateConfiguration: SensorPublishGate.Configuration {
            var c = SensorPublishGate.Configuration()
            c.minimumInterval = .milliseconds(Int64(minIntervalSeconds * 1000))
            c.repeatWindow = .milliseconds(Int64(repeatWindowSeconds * 1000))
            return c
        }
    }

    public struct Log: Sendable, Equatable {
        public init() {}

        /// trace, debug, info, notice, warning, error or critical. Settable remotely; `--log-level` sets the start.
        public var level = "info"
    }

    public struct RemoteConfig: Sendable, Equatable {
        public init() {}

        /// Follow `<prefix>/fleet/config` and `<prefix>/<id>/config` (docs/CONFIG.md). Local only.
        public var enabled = true
        /// At start, how long to wait for the broker's retained config before scanning anyway (seconds).
        public var startupWaitSeconds = 3.0
        /// An Ed25519 public key (base64, from `blegateway config keygen`): when set, only documents signed with
        /// the matching private key apply, and never one with a lower version than the one in force.
        public var publicKeyFile: String?
    }

    /// How peripheral links are made and watched (`connections:`).
    public struct Connections: Sendable, Equatable {
        public init() {}

        /// Links at once; the controller may allow fewer (it then answers 0x09 Connection Limit Exceeded).
        public var max = 4
        /// LE Create Connection Cancel after this long without a link (so one silent device does not hold the others).
        public var connectTimeoutSeconds = 5.0
        /// HCI Read RSSI on each link this often (0: off); published on `…/peripherals/<address>/rssi`.
        public var rssiIntervalSeconds = 5.0
        /// The longest wait between attempts for a device that keeps failing.
        public var maxBackoffSeconds = 60.0
        /// ATT transaction timeout (Core v5.4, Vol 3, Part F, §3.3.3: 30 s); the link is dropped after it.
        public var attTimeoutSeconds = 30.0
        /// One owner per peripheral (docs/PERIPHERALS.md): 0 (the default) connects every configured address
        /// itself; above 0, the gateways under the prefix agree through the broker which one connects each, with a
        /// claim lease of this many seconds. Read at start.
        public var ownerLeaseSeconds = 0.0
        /// A standby gateway takes a peripheral over when it hears it this much better than the owner.
        public var ownerMarginDB = 8.0
        /// Devices wanted because their name or a service matched an intent (any advertiser may claim a name): beyond
        /// this many, the one not connected for longest is let go and counted (`peripherals.evicted_matches`).
        public var maxMatched = 64
    }

    /// How RSSI becomes distance and proximity (`ranging:`): the tunable part of `RangingConfiguration`, whose
    /// defaults these are. Settable remotely; a change rebuilds the ranging engine (beacons are tracked afresh).
    public struct Ranging: Sendable, Equatable {
        public init() {}
        static let domain = RangingConfiguration()

        /// n in RSSI = P₁ₘ − 10·n·log10(d).
        public var pathLossExponent = domain.pathLossExponent
        /// RSSI at 1 m for a beacon that advertises none (or a nonsense one).
        public var rssiAt1m = domain.defaultRSSIAt1m
        /// This gateway's receiver correction, dB, added to every RSSI it ranges (docs/CONFIG.md, "Calibrating on site").
        public var rssiOffsetDB = domain.rssiOffsetDB
        /// Proximity bands (metres): immediate below the first, near below the second; first < second.
        public var immediateBelowMeters = domain.immediateBelow
        public var nearBelowMeters = domain.nearBelow
        /// Fraction past a band's edge before the proximity changes.
        public var proximityHysteresis = domain.proximityHysteresis
        /// Unheard this long: proximity `unknown`; this long: forgotten. unknown_after_s < forget_after_s.
        public var unknownAfterSeconds = domain.unknownAfter.seconds
        public var forgetAfterSeconds = domain.forgetAfter.seconds
        /// The filter's constants (docs/design/ranging.md, "Filter").
        public var filterSigmaDB = domain.filter.measurementSigmaDB
        public var filterQuietAcceleration = domain.filter.quietAcceleration
        public var filterManeuverAcceleration = domain.filter.maneuverAcceleration
        public var filterManeuverThreshold = domain.filter.maneuverThreshold
        public var filterInnovationSmoothing = domain.filter.innovationSmoothing
        public var maxSpeedMetersPerSecond = domain.filter.maximumSpeed
    }

    public var gateway = Gateway()
    public var adapter = Adapter()
    public var scan = Scan()
    public var mqtt = MQTT()
    public var spool = Spool()
    public var publishing = Publishing()
    public var sensors = Sensors()
    public var log = Log()
    public var remoteConfig = RemoteConfig()
    /// Regions to monitor (`regions:`, local only): each has its retained state on `<prefix>/<gateway>/regions/<id>`.
    public var regions: [Region] = []
    /// Identity resolving keys (`identity_keys:`, local only): resolvable private addresses become the key's identity
    /// address, so ranging and regions follow a device across address rotations.
    public var identityKeys: [IdentityResolvingKey] = []
    /// Where `blegateway enrol` keeps the identities it took by pairing (`identity_keys_file:`, local only); its keys
    /// join `identityKeys` when the configuration is loaded. Mode 0600: a file others may read is refused.
    public var identityKeysFile = IdentityKeyFile.defaultPath
    public var connections = Connections()
    public var ranging = Ranging()
    /// Peripherals to keep connected (`peripherals:`), with their GATT subscriptions, reads and writable characteristics.
    public var peripherals: [PeripheralIntent] = []
    /// Home Assistant MQTT discovery (`homeassistant:`), off unless enabled.
    public var homeAssistant = HomeAssistant()
    /// ESPHome's native API (`esphome_api:`, local only), off unless enabled: the gateway as a Bluetooth proxy for
    /// Home Assistant's `esphome` integration (docs/ESPHOME.md).
    public var esphomeAPI = ESPHomeAPI()

    public init() {}

    public struct ESPHomeAPI: Sendable, Equatable {
        public init() {}

        public var enabled = false
        public var host = "0.0.0.0"
        /// ESPHome's own port.
        public var port = 6053
        /// The Noise pre-shared key, 32 bytes (ESPHome's `api: encryption: key:`, base64 in the file). Nil: plaintext
        /// framing, which the configuration check warns about.
        public var key: [UInt8]?
        /// The device name Home Assistant knows the proxy by; the gateway id when not given.
        public var name: String?
    }

    /// The ranging engine's configuration: `ranging:` over the domain's defaults, one interval per
    /// `publishing.ranging_interval_s`.
    public var rangingConfiguration: RangingConfiguration {
        var r = RangingConfiguration()
        r.interval = .seconds(publishing.rangingIntervalSeconds)
        r.pathLossExponent = ranging.pathLossExponent
        r.defaultRSSIAt1m = ranging.rssiAt1m
        r.rssiOffsetDB = ranging.rssiOffsetDB
        r.immediateBelow = ranging.immediateBelowMeters
        r.nearBelow = ranging.nearBelowMeters
        r.proximityHysteresis = ranging.proximityHysteresis
        r.unknownAfter = .seconds(ranging.unknownAfterSeconds)
        r.forgetAfter = .seconds(ranging.forgetAfterSeconds)
        r.filter.measurementSigmaDB = ranging.filterSigmaDB
        r.filter.quietAcceleration = ranging.filterQuietAcceleration
        r.filter.maneuverAcceleration = ranging.filterManeuverAcceleration
        r.filter.maneuverThreshold = ranging.filterManeuverThreshold
        r.filter.innovationSmoothing = ranging.filterInnovationSmoothing
        r.filter.maximumSpeed = ranging.maxSpeedMetersPerSecond
        return r
    }
}
