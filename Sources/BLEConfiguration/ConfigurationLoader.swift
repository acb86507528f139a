import BLETransport
import Foundation

/// Loads the local configuration file: one place that reads it, so `config check` and `run` fail
/// with the same message.
public enum ConfigurationLoader {
    public struct Loaded: Sendable {
        public var configuration: GatewayConfiguration
        public var warnings: [ConfigurationError]
    }

    /// Reads and validates `path`. Errors are `ConfigurationError`s naming the file, line and column.
    public static func load(path: String) throws -> Loaded {
        let text: String
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let s = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(path: "", "\(path): not UTF-8 text")
            }
            text = s
        } catch let e as ConfigurationError {
            throw e
        } catch {
            let why: String
            if access(path, F_OK) != 0 {
                why = "no such file"
            } else if access(path, R_OK) != 0 {
                why = "permission denied (the gateway's user needs read access to the file and its directory)"
            } else {
                why = error.localizedDescription
            }
            throw ConfigurationError(path: "", "cannot read \(path): \(why)")
        }
        var reader = YAMLConfigurationReader()
        var c: GatewayConfiguration
        do {
            c = try reader.read(text)
            try validate(c)
        } catch let e as ConfigurationError {
            throw FileConfigurationError(file: path, error: e)
        }
        // The enrolled identities (`blegateway enrol`): a key already in `identity_keys` is not added twice. The
        // default file out of this user's reach (a tool run as another user) is a warning; a file named in the
        // configuration must be readable.
        var warnings = reader.warnings
        if c.homeAssistant.enabled, c.gateway.id.contains(".") {
            // Home Assistant's discovery node id takes [a-zA-Z0-9_-]: the documents go under an escaped node, which the
            // shipped ACL's `homeassistant/device/%u/#` cannot match.
            warnings.append(
                ConfigurationError(
                    path: "gateway.id",
                    """
                    "\(c.gateway.id)" has a '.': Home Assistant's discovery documents go under an escaped node id, \
                    which a broker ACL pattern on the username (homeassistant/device/%u/#) does not match
                    """))
        }
        if c.mqtt.brokers.count > 1, c.mqtt.protocolVersion == 3,
            let (path, value) = [("gateway.id", c.gateway.id), ("mqtt.prefix", c.mqtt.prefix)].first(where: {
                $0.1.contains(".")
            })
        {
            // Several brokers under MQTT 3.1.1 is how a NATS cluster is joined (docs/DEPLOY.md), and NATS 2.9 closes
            // the connection of a publish to a topic with a '.': every reading would be refused, over and over.
            warnings.append(
                ConfigurationError(
                    path: path,
                    """
                    "\(value)" has a '.': a NATS cluster (MQTT 3.1.1, several nodes) closes the connection of a \
                    publish to a topic with one (docs/DEPLOY.md, "MQTT clusters")
                    """))
        }
        do {
            for key in try IdentityKeyFile.load(c.identityKeysFile)
            where !c.identityKeys.contains(where: { $0.octets == key.octets }) {
                c.identityKeys.append(key)
            }
        } catch let e as IdentityKeyFile.FileError
            where e.unreachable && c.identityKeysFile == IdentityKeyFile.defaultPath
        {
            warnings.append(
                ConfigurationError(path: "identity_keys_file", "\(e); enrolled identities are not resolved"))
        } catch let e as IdentityKeyFile.FileError {
            throw FileConfigurationError(file: path, error: ConfigurationError(path: "identity_keys_file", "\(e)"))
        }
        return Loaded(configuration: c, warnings: warnings)
    }

    /// Checks that cross fields and identifiers make sense (topics can be built, URLs parse).
    public static func validate(_ c: GatewayConfiguration) throws {
        if let why = TopicIdentifier.problem(with: c.gateway.id) {
            throw ConfigurationError(path: "gateway.id", "\"\(c.gateway.id)\": \(why)")
        }
        for level in c.mqtt.prefix.split(separator: "/", omittingEmptySubsequences: false) {
            if let why = TopicIdentifier.problem(with: String(level)) {
                throw ConfigurationError(path: "mqtt.prefix", "\"\(c.mqtt.prefix)\": \(why)")
            }
        }
        _ = try BrokerAddress.list(c.mqtt.brokers)
        if c.mqtt.reconnectMinSeconds > c.mqtt.reconnectMaxSeconds {
            throw ConfigurationError(path: "mqtt.reconnect_min_s", "must not exceed mqtt.reconnect_max_s")
        }
        // Again here, for a mode or device given on the command line after the file was read.
        if let spec = try? DeviceSpec(parsing: c.adapter.device), let why = c.adapter.mode.refusal(for: spec) {
            throw ConfigurationError(path: "adapter.mode", why)
        }
    }
}

/// A configuration error in a named file: `FILE: line L, column C: path: message`.
public struct FileConfigurationError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var error: ConfigurationError
    public var description: String { "\(file): \(error)" }
}

/// The rule `Topics` applies (TopicLevel), usable before the publishing layer is configured; `fleet` is the fleet-wide
/// config's level and no gateway's.
enum TopicIdentifier {
    static func problem(with level: String) -> String? {
        if let why = TopicLevel.problem(Substring(level)) { return why }
        if level == "fleet" { return "\"fleet\" is reserved for fleet-wide config" }
        return nil
    }
}

/// `mqtt://HOST:PORT` or `mqtts://HOST:PORT` (port defaults 1883 / 8883).
public struct BrokerAddress: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var tls: Bool

    /// `mqtt.brokers`, each parsed: at least one, no broker twice, and one scheme for all (the TLS settings are
    /// the client's, not a broker's).
    public static func list(_ urls: [String]) throws -> [BrokerAddress] {
        guard !urls.isEmpty else { throw ConfigurationError(path: "mqtt.brokers", "expected at least one broker") }
        let path = { (i: Int) in urls.count == 1 ? "mqtt.broker" : "mqtt.brokers[\(i)]" }
        var seen: [String: Int] = [:]
        var parsed: [BrokerAddress] = []
        for (i, url) in urls.enumerated() {
            let a = try BrokerAddress(parsing: url, path: path(i))
            let key = "\(a.host.lowercased()):\(a.port)"
            if let first = seen[key] {
                throw ConfigurationError(path: path(i), "\"\(url)\": the same broker as mqtt.brokers[\(first)]")
            }
            seen[key] = i
            if let first = parsed.first, first.tls != a.tls {
                throw ConfigurationError(
                    path: path(i),
                    "\"\(url)\": every broker must use the scheme of the first (\(first.tls ? "mqtts" : "mqtt")://)")
            }
            parsed.append(a)
        }
        return parsed
    }

    public init(parsing url: String, path: String = "mqtt.broker") throws {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            tls = false
            rest = url.dropFirst(7)
        } else if url.hasPrefix("mqtts://") {
            tls = true
            rest = url.dropFirst(8)
        } else {
            throw ConfigurationError(path: path, "\"\(url)\": expected mqtt://HOST:PORT or mqtts://HOST:PORT")
        }
        let hostPort = rest.hasSuffix("/") ? rest.dropLast() : rest
        var host = String(hostPort)
        var port = tls ? 8883 : 1883
        if hostPort.hasPrefix("[") {  // [::1]:1883
            guard let close = hostPort.firstIndex(of: "]") else {
                throw ConfigurationError(path: path, "\"\(url)\": unterminated IPv6 address")
            }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    throw ConfigurationError(path: path, "\"\(url)\": bad port")
                }
                port = p
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else {
                throw ConfigurationError(path: path, "\"\(url)\": bad port")
            }
            port = p
        }
        guard !host.isEmpty, !host.contains("/") else {
            throw ConfigurationError(path: path, "\"\(url)\": no host")
        }
        self.host = host
        self.port = port
        self.tls = tls
    }
}
