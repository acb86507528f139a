import Yams

/// Reads `gateway.yaml` through Yams' node tree rather than `Codable`, so every error — a tab, a
/// duplicate key, a wrong type, a value out of range — names its line and column and key path, and
/// unknown keys become warnings instead of being silently ignored.
public struct YAMLConfigurationReader {
    public internal(set) var warnings: [ConfigurationError] = []
    /// Nodes built from a remote JSON document (RemoteConfigDocument): types are JSON's, strict — a string is only
    /// a quoted scalar, a number or boolean only a plain one — and errors name them as JSON does.
    var jsonTypes = false

    public init() {}

    public mutating func read(_ text: String) throws -> GatewayConfiguration {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let e as YamlError {
            throw Self.error(from: e, in: text)
        }
        var c = GatewayConfiguration()
        guard let root else { return c }  // an empty file means every default
        let top = try mapping(root, "")
        for (key, node) in top {
            switch key {
            case "gateway":
                for (k, v) in try mapping(node, "gateway") {
                    switch k {
                    case "id": c.gateway.id = try string(v, "gateway.id")
                    default: unknown(v, "gateway.\(k)")
                    }
                }
            case "adapter": c.adapter = try adapter(node, "adapter")
            case "scan":
                for (k, v) in try mapping(node, "scan") {
                    switch k {
                    case "active": c.scan.active = try bool(v, "scan.active")
                    case "interval_ms": c.scan.intervalMS = try double(v, "scan.interval_ms", 2.5...10240)
                    case "window_ms": c.scan.windowMS = try double(v, "scan.window_ms", 2.5...10240)
                    case "filters": c.scan.filters = try strings(v, "scan.filters")
                    default: unknown(v, "scan.\(k)")
                    }
                }
                if c.scan.windowMS > c.scan.intervalMS {
                    throw ConfigurationError(
                        path: "scan.window_ms", line: node.mark?.line, column: node.mark?.column,
                        "the scan window (\(c.scan.windowMS) ms) must not exceed the interval (\(c.scan.intervalMS) ms)"
                    )
                }
            case "mqtt":
                var brokerKey: String?
                for (k, v) in try mapping(node, "mqtt") {
                    let p = "mqtt.\(k)"
                    if k == "broker" || k == "brokers" {
                        if let other = brokerKey {
                            throw fail(v, p, "give mqtt.\(other) or mqtt.\(k), not both (broker is the one-entry form)")
                        }
                        brokerKey = k
                    }
                    switch k {
                    case "broker": c.mqtt.broker = try string(v, p)
                    case "brokers":
                        c.mqtt.brokers = try strings(v, p)
                        if c.mqtt.brokers.isEmpty { throw fail(v, p, "expected at least one broker") }
                    case "failover":
                        c.mqtt.failover = .init(
                            rawValue: try oneOf(v, p, GatewayConfiguration.Failover.allCases.map(\.rawValue)))!
                    case "prefix": c.mqtt.prefix = try string(v, p)
                    case "client_id": c.mqtt.clientID = try string(v, p)
                    case "protocol":
                        c.mqtt.protocolVersion = try int(v, p, 3...5)
                        if c.mqtt.protocolVersion == 4 { c.mqtt.protocolVersion = 3 }
                    case "keepalive_s": c.mqtt.keepAliveSeconds = try int(v, p, 5...3600)
                    case "qos": c.mqtt.qos = try int(v, p, 0...2)
                    case "username_file": c.mqtt.usernameFile = try string(v, p)
                    case "password_file": c.mqtt.passwordFile = try string(v, p)
                    case "reconnect_min_s": c.mqtt.reconnectMinSeconds = try double(v, p, 0.1...3600)
                    case "reconnect_max_s": c.mqtt.reconnectMaxSeconds = try double(v, p, 0.1...86400)
                    case "inflight": c.mqtt.inflight = try int(v, p, 1...10000)
                    case "session_expiry_s": c.mqtt.sessionExpirySeconds = try int(v, p, 0...0xFFFF_FFFF)
                    case "max_payload_bytes": c.mqtt.maxPayloadBytes = try int(v, p, 0...268_435_460)
                    case "tls":
                        for (tk, tv) in try mapping(v, p) {
                            let tp = "\(p).\(tk)"
                            switch tk {
                            case "ca_file": c.mqtt.tls.caFile = try string(tv, tp)
                            case "cert_file": c.mqtt.tls.certFile = try string(tv, tp)
                            case "key_file": c.mqtt.tls.keyFile = try string(tv, tp)
                            case "key_passphrase_file": c.mqtt.tls.keyPassphraseFile = try string(tv, tp)
                            case "verify_hostname": c.mqtt.tls.verifyHostname = try bool(tv, tp)
                            default: unknown(tv, tp)
                            }
                        }
                    default: unknown(v, p)
                    }
                }
            case "spool":
                for (k, v) in try mapping(node, "spool") {
                    let p = "spool.\(k)"
                    switch k {
                    case "path": c.spool.path = try string(v, p)
                    case "max_mb": c.spool.maxMegabytes = try double(v, p, 1...1_000_000)
                    case "commit_window_ms": c.spool.commitWindowMS = try double(v, p, 1...100)
                    case "value_commit_window_ms": c.spool.valueCommitWindowMS = try double(v, p, 1...100)
                    case "reserve_mb": c.spool.reserveMegabytes = try double(v, p, 0...1024)
                    default: unknown(v, p)
                    }
                }
            case "publishing":
                for (k, v) in try mapping(node, "publishing") {
                    let p = "publishing.\(k)"
                    switch k {
                    case "ranging_interval_s": c.publishing.rangingIntervalSeconds = try double(v, p, 0.1...3600)
                    case "health_interval_s": c.publishing.healthIntervalSeconds = try double(v, p, 1...86400)
                    case "sample_expiry_s": c.publishing.sampleExpirySeconds = try int(v, p, 0...0xFFFF_FFFF)
                    case "raw_advertisements": c.publishing.rawAdvertisements = try bool(v, p)
                    case "raw_max_per_s": c.publishing.rawMaxPerSecond = try double(v, p, 0.1...10000)
                    default: unknown(v, p)
                    }
                }
            case "log":
                for (k, v) in try mapping(node, "log") {
                    switch k {
                    case "level": c.log.level = try oneOf(v, "log.level", RemoteConfigDocument.logLevels)
                    default: unknown(v, "log.\(k)")
                    }
                }
            case "remote_config":
                for (k, v) in try mapping(node, "remote_config") {
                    let p = "remote_config.\(k)"
                    switch k {
                    case "enabled": c.remoteConfig.enabled = try bool(v, p)
                    case "startup_wait_s": c.remoteConfig.startupWaitSeconds = try double(v, p, 0...60)
                    case "public_key_file": c.remoteConfig.publicKeyFile = try string(v, p)
                    default: unknown(v, p)
                    }
                }
            case "regions": c.regions = try regions(node, "regions")
            case "identity_keys": c.identityKeys = try identityKeys(node, "identity_keys")
            case "identity_keys_file": c.identityKeysFile = try string(node, "identity_keys_file")
            case "sensors": c.sensors = try sensors(node, "sensors")
            case "connections": c.connections = try connections(node, "connections")
            case "ranging": c.ranging = try ranging(node, "ranging")
            case "peripherals": c.peripherals = try peripherals(node, "peripherals")
            case "homeassistant": c.homeAssistant = try homeAssistant(node, "homeassistant")
            case "esphome_api": c.esphomeAPI = try esphomeAPI(node, "esphome_api")
            default:
                unknown(node, key)
            }
        }
        return c
    }

    // MARK: - Typed access with positions

    static func error(from e: YamlError, in text: String) -> ConfigurationError {
        switch e {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _):
            let ctx = context.map { "\($0.text) " } ?? ""
            var msg = "\(ctx)\(problem)"
            // libyaml reports a tab only as "a character that cannot start any token": say what it is.
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            if mark.line >= 1, mark.line <= lines.count, lines[mark.line - 1].contains("\t") {
                msg += " (a tab: YAML indents with spaces only)"
            }
            return ConfigurationError(path: "", line: mark.line, column: mark.column, "YAML syntax: \(msg)")
        default:
            return ConfigurationError(path: "", "YAML: \(e)")
        }
    }

    func fail(_ node: Node, _ path: String, _ message: String) -> ConfigurationError {
        ConfigurationError(path: path, line: node.mark?.line, column: node.mark?.column, message)
    }

    mutating func unknown(_ node: Node, _ path: String) {
        warnings.append(fail(node, path, ConfigurationError.unknownKey))
    }

    /// A mapping's pairs in file order; duplicate keys are an error (YAML 1.2 §3.2.1.1 requires unique keys).
    func mapping(_ node: Node, _ path: String) throws -> [(String, Node)] {
        guard case .mapping(let m) = node else {
            throw fail(
                node, path,
                jsonTypes
                    ? "expected an object, found \(Self.jsonTypeName(node))"
                    : "expected a mapping of keys to values")
        }
        var seen: Set<String> = []
        var out: [(String, Node)] = []
        for (k, v) in m {
            guard case .scalar(let s) = k else { throw fail(k, path, "keys must be plain strings") }
            guard seen.insert(s.string).inserted else {
                throw fail(k, path.isEmpty ? s.string : "\(path).\(s.string)", "duplicate key \"\(s.string)\"")
            }
            out.append((s.string, v))
        }
        return out
    }

    func scalar(_ node: Node, _ path: String, _ what: String) throws -> Node.Scalar {
        guard case .scalar(let s) = node else {
            throw fail(
                node, path, jsonTypes ? "expected \(what), found \(Self.jsonTypeName(node))" : "expected \(what)")
        }
        return s
    }

    /// What a node built from JSON was: strings are quoted, everything else plain.
    static func jsonTypeName(_ node: Node) -> String {
        switch node {
        case .mapping: return "an object"
        case .sequence: return "a list"
        case .scalar(let s):
            if s.style != .plain { return "a string" }
            switch s.string {
            case "true", "false": return "a boolean"
            case "null": return "null"
            default: return "a number"
            }
        }
    }

    /// In JSON mode, a scalar of the wrong JSON type.
    private func checkJSON(_ node: Node, _ path: String, _ s: Node.Scalar, string: Bool, _ what: String) throws {
        guard jsonTypes else { return }
        let name = Self.jsonTypeName(node)
        let ok = string ? name == "a string" : (what == "true or false" ? name == "a boolean" : name == "a number")
        if !ok { throw fail(node, path, "expected \(what), found \(name)") }
    }

    func string(_ node: Node, _ path: String) throws -> String {
        let s = try scalar(node, path, "a string")
        try checkJSON(node, path, s, string: true, "a string")
        if s.string.isEmpty && s.style == .plain { throw fail(node, path, "expected a string, found nothing") }
        return s.string
    }

    func bool(_ node: Node, _ path: String) throws -> Bool {
        let s = try scalar(node, path, "true or false")
        try checkJSON(node, path, s, string: false, "true or false")
        switch s.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw fail(node, path, "expected true or false, found \"\(s.string)\"")
        }
    }

    func int(_ node: Node, _ path: String, _ range: ClosedRange<Int>) throws -> Int {
        let s = try scalar(node, path, "a whole number")
        try checkJSON(node, path, s, string: false, "a whole number")
        guard let v = Int(s.string) else { throw fail(node, path, "expected a whole number, found \"\(s.string)\"") }
        guard range.contains(v) else {
            throw fail(node, path, "\(v) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        return v
    }

    func double(_ node: Node, _ path: String, _ range: ClosedRange<Double>) throws -> Double {
        let s = try scalar(node, path, "a number")
        try checkJSON(node, path, s, string: false, "a number")
        guard let v = Double(s.string), v.isFinite else {
            throw fail(node, path, "expected a number, found \"\(s.string)\"")
        }
        guard range.contains(v) else {
            throw fail(node, path, "\(v) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        return v
    }

    func oneOf(_ node: Node, _ path: String, _ allowed: [String]) throws -> String {
        let v = try string(node, path)
        guard allowed.contains(v) else {
            throw fail(node, path, "expected one of \(allowed.joined(separator: ", ")), found \"\(v)\"")
        }
        return v
    }

    func strings(_ node: Node, _ path: String) throws -> [String] {
        guard case .sequence(let seq) = node else { throw fail(node, path, "expected a list") }
        return try seq.enumerated().map { try string($0.element, "\(path)[\($0.offset)]") }
    }
}
