/// How the gateway reaches its MQTT broker. Nested `Sendable` structs with defaults, each field documented
/// (service-lifecycle's `ServiceGroupConfiguration` habit); the example config shows every key.
///
/// Secrets never live in this struct: the username and password are read from files at connect time
/// (systemd `LoadCredential=` style), so they never appear on a command line, in the environment, or in a
/// printed configuration. `description` prints file paths only.
public struct MQTTConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The brokers a connection may go to: one broker, or the nodes of a cluster. After an attempt ends (refused,
    /// failed, or a connection lost) the next one dials another, as `failover` says (`BrokerRotation`). All share the
    /// client's other settings (TLS, credentials, session).
    public var brokers: [Broker] = [Broker(host: "localhost", port: 1883)]
    /// How the next broker is chosen.
    public var failover: Failover = .inOrder
    /// The first broker's host name or address.
    public var host: String {
        get { brokers.first?.host ?? "localhost" }
        set {
            if brokers.isEmpty { brokers.append(Broker(host: newValue, port: 1883)) }
            brokers[0].host = newValue
        }
    }
    /// The first broker's TCP port (1883 plain, 8883 is the usual TLS port).
    public var port: Int {
        get { brokers.first?.port ?? 1883 }
        set {
            if brokers.isEmpty { brokers.append(Broker(host: "localhost", port: newValue)) }
            brokers[0].port = newValue
        }
    }
    /// MQTT client identifier; with a persistent session the broker keys the session on it, so it must be stable.
    public var clientID: String = "blegateway"
    /// Protocol version spoken on the wire.
    public var protocolVersion: MQTTProtocolVersion = .v5
    /// Keep-alive interval (MQTT 3.1.1 §3.1.2.10 / MQTT 5 §3.1.2.10); libmosquitto sends PINGREQ within it.
    public var keepAlive: Duration = .seconds(30)
    /// Clean or persistent session.
    public var session: Session = .clean
    /// TLS; `nil` means plain TCP.
    public var tls: TLS? = nil
    /// Username and password files; `nil` means anonymous.
    public var credentials: Credentials? = nil
    /// Last will, published by the broker when the connection ends without a DISCONNECT (crash, kill -9, lost link).
    public var will: Will? = nil
    /// Reconnect backoff.
    public var reconnect: Reconnect = Reconnect()
    /// Most publishes awaiting acknowledgement at once; `publish` refuses more with `.inFlightWindowFull`.
    /// Also given to libmosquitto as its send maximum, so its own queue never grows past this window.
    public var maxInFlight: Int = 64
    /// The TLS handshake is given up after this: a TLS client on a plaintext port is answered by nothing at all.
    public var connectTimeout: Duration = .seconds(10)

    public init() {}

    /// One broker: a host name or address and a TCP port.
    public struct Broker: Sendable, Equatable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `HOST:PORT`, an IPv6 address in brackets.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// How the broker of the next attempt is chosen from `brokers`.
    public enum Failover: String, Sendable, Equatable, CaseIterable {
        /// The next one in the list, from the first, round and round.
        case inOrder = "in_order"
        /// Any other one, each as likely; the first attempt draws too, so a fleet spreads over a cluster's nodes.
        case random
    }

    /// Session state kept by the broker across connections.
    public enum Session: Sendable, Equatable {
        /// MQTT 3.1.1 CleanSession=1 / MQTT 5 Clean Start=1 with Session Expiry 0: nothing survives a disconnect.
        case clean
        /// MQTT 3.1.1 CleanSession=0 / MQTT 5 Clean Start=0 with Session Expiry Interval `expiry` (§3.1.2.11.2):
        /// the broker keeps subscriptions and queued QoS 1/2 messages for that long after a disconnect.
        /// MQTT 3.1.1 has no expiry; the broker's own policy applies.
        case persistent(expiry: Duration)
    }

    /// TLS settings. A CA file or directory is required to verify the broker; without either the system trust
    /// store is used.
    public struct TLS: Sendable, Equatable {
        /// PEM file of trusted CA certificates.
        public var caFile: String? = nil
        /// Directory of hashed CA certificates (`c_rehash`).
        public var caPath: String? = nil
        /// PEM client certificate, for brokers that require mutual TLS.
        public var certificateFile: String? = nil
        /// PEM private key of the client certificate.
        public var keyFile: String? = nil
        /// File holding the passphrase of an encrypted `keyFile`; read at connect time, never logged.
        public var keyPassphraseFile: String? = nil
        /// Check that the broker certificate names `host`. Turning this off allows man-in-the-middle attacks.
        public var verifyHostname: Bool = true

        public init(
            caFile: String? = nil, caPath: String? = nil, certificateFile: String? = nil,
            keyFile: String? = nil, keyPassphraseFile: String? = nil, verifyHostname: Bool = true
        ) {
            self.caFile = caFile
            self.caPath = caPath
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.keyPassphraseFile = keyPassphraseFile
            self.verifyHostname = verifyHostname
        }
    }

    /// Credential files, one secret per file; a single trailing newline is ignored.
    public struct Credentials: Sendable, Equatable {
        /// File holding the username.
        public var usernameFile: String
        /// File holding the password; `nil` sends a username only.
        public var passwordFile: String?

        public init(usernameFile: String, passwordFile: String? = nil) {
            self.usernameFile = usernameFile
            self.passwordFile = passwordFile
        }
    }

    /// The last will message (MQTT 5 §3.1.2.5).
    public struct Will: Sendable, Equatable {
        /// Topic the broker publishes the will to.
        public var topic: String
        /// Will payload.
        public var payload: [UInt8]
        /// Will QoS.
        public var qos: MQTTQoS = .atLeastOnce
        /// Whether the broker retains the will (so a late subscriber still sees "offline").
        public var retain: Bool = true

        public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    /// Exponential backoff between connection attempts: `min`, `2·min`, `4·min` … capped at `max`, each shortened
    /// by a random fraction up to `jitter` so a fleet restarting together does not reconnect in step.
    public struct Reconnect: Sendable, Equatable {
        /// Delay after the first failure.
        public var minDelay: Duration = .seconds(1)
        /// Largest delay.
        public var maxDelay: Duration = .seconds(60)
        /// Fraction 0…1 of each delay that is randomised away.
        public var jitter: Double = 0.2

        public init(minDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), jitter: Double = 0.2) {
            self.minDelay = minDelay
            self.maxDelay = maxDelay
            self.jitter = jitter
        }
    }

    public var description: String {
        var parts = [
            brokers.map { "mqtt://\($0)" }.joined(separator: ","), "clientID=\(clientID)",
            "protocol=\(protocolVersion)",
            "keepAlive=\(keepAlive)", "session=\(session)", "maxInFlight=\(maxInFlight)",
        ]
        if let tls {
            parts.append(
                "tls(ca=\(tls.caFile ?? tls.caPath ?? "system"), cert=\(tls.certificateFile ?? "none"), "
                    + "key=\(tls.keyFile ?? "none"), passphrase=\(tls.keyPassphraseFile == nil ? "none" : "<redacted>"), "
                    + "verifyHostname=\(tls.verifyHostname))")
        }
        if let credentials {
            parts.append(
                "credentials(username=<redacted from \(credentials.usernameFile)>, password="
                    + (credentials.passwordFile.map { "<redacted from \($0)>" } ?? "none") + ")")
        }
        if brokers.count > 1 { parts.append("failover=\(failover.rawValue)") }
        if let will { parts.append("will(\(will.topic), qos=\(will.qos.rawValue), retain=\(will.retain))") }
        return parts.joined(separator: " ")
    }
}

/// MQTT protocol level (MQTT 5 §3.1.2.2: 4 = 3.1.1, 5 = 5.0).
public enum MQTTProtocolVersion: Int, Sendable, CustomStringConvertible {
    case v311 = 4
    case v5 = 5

    public var description: String { self == .v5 ? "5.0" : "3.1.1" }
}
