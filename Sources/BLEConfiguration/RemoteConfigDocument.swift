import BLEDomain
import BLETransport
import Yams

/// One problem in a remote configuration document: a JSON path (`$.scan.interval_ms`, `$.scan.filters[2]`) and why.
public struct ConfigIssue: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String { "\(path): \(reason)" }
}

/// What a remote document sets: only the keys allowed remotely, each nil when the document leaves it alone.
public struct RemoteConfigOverlay: Sendable, Equatable {
    public var version: Int?
    /// A tombstone (`{"version": N, "delete": true}`): the layer is deleted. It sets nothing else.
    public var delete = false
    public var scanActive: Bool?
    public var scanIntervalMS: Double?
    public var scanWindowMS: Double?
    public var scanFilters: [String]?
    public var rangingIntervalSeconds: Double?
    public var healthIntervalSeconds: Double?
    public var rawAdvertisements: Bool?
    public var rawMaxPerSecond: Double?
    public var logLevel: String?
    /// Whole lists: a document that names them replaces the local ones (an empty list means none).
    public var regions: [Region]?
    public var peripherals: [PeripheralIntent]?
    /// The whole `homeassistant` section: a document that names it replaces the local one.
    public var homeAssistant: GatewayConfiguration.HomeAssistant?
    /// The `connections` and `ranging` keys the document gives, by name (ConfigNumberKey tables).
    public var connections: [String: Double] = [:]
    public var ranging: [String: Double] = [:]

    public init() {}

    /// What a tombstone reads as: a version and the deletion, nothing else.
    static func tombstone(_ version: Int?) -> RemoteConfigOverlay {
        var o = RemoteConfigOverlay()
        o.version = version
        o.delete = true
        return o
    }

    public func apply(to c: inout GatewayConfiguration) {
        if let v = scanActive { c.scan.active = v }
        if let v = scanIntervalMS { c.scan.intervalMS = v }
        if let v = scanWindowMS { c.scan.windowMS = v }
        if let v = scanFilters { c.scan.filters = v }
        if let v = rangingIntervalSeconds { c.publishing.rangingIntervalSeconds = v }
        if let v = healthIntervalSeconds { c.publishing.healthIntervalSeconds = v }
        if let v = rawAdvertisements { c.publishing.rawAdvertisements = v }
        if let v = rawMaxPerSecond { c.publishing.rawMaxPerSecond = v }
        if let v = logLevel { c.log.level = v }
        if let v = regions { c.regions = v }
        if let v = peripherals { c.peripherals = v }
        if let v = homeAssistant { c.homeAssistant = v }
        for key in GatewayConfiguration.Connections.keys {
            if let v = connections[key.name] { key.set(&c.connections, v) }
        }
        for key in GatewayConfiguration.Ranging.keys { if let v = ranging[key.name] { key.set(&c.ranging, v) } }
    }
}

/// Reads a remote configuration document (docs/CONFIG.md, "Remote configuration"). Strict where a mistake would
/// change behaviour — a wrong type, a value out of range, a local-only key — so the whole document is rejected and
/// the previous configuration stays; lenient where it cannot — an unknown key is a warning.
public enum RemoteConfigDocument {
    public struct Verdict: Sendable, Equatable {
        /// nil when the document is rejected (`errors` says why).
        public var overlay: RemoteConfigOverlay?
        public var errors: [ConfigIssue]
        public var warnings: [ConfigIssue]
        /// The document's own bytes (inside the signed form when signed): what an equal version must repeat.
        public var document: [UInt8] = []
    }

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Sections that belong to the gateway's own file: naming them remotely is an error, so an operator who tried
    /// to move a gateway to another broker learns at once that it did not happen.
    static let localOnly: [String: String] = [
        "gateway": "the gateway's identity is local only",
        "adapter": "the adapter is local only",
        "mqtt": "broker, credentials and TLS files are local only",
        "spool": "the spool location and size are local only",
        "remote_config": "remote configuration settings are local only",
        "identity_keys": "identity resolving keys are local only (they are secrets)",
        "identity_keys_file": "the enrolled identities' file is local only (it holds secrets)",
        "sensors":
            "sensor settings and bindkeys are local only (a retained document would show the keys to its readers)",
    ]

    /// At most this many regions or peripherals in one document: each region is checked per sighting.
    static let maxListCount = 256

    /// - Parameters:
    ///   - verifier: when set, only a signed document (ConfigSigning) whose signature verifies is accepted, and it
    ///     must carry a `version`. Without it, a signed document is read with a warning that nothing was checked.
    ///   - address: the layer and gateway the document arrived for; with a verifier, a document signed for another
    ///     target or layer is refused (the signature covers both).
    public static func read(
        _ payload: [UInt8], verifier: ConfigSigning.Verifier? = nil,
        address: ConfigSigning.Address? = nil
    ) -> Verdict {
        func rejected(_ path: String, _ reason: String, _ warnings: [ConfigIssue] = []) -> Verdict {
            Verdict(overlay: nil, errors: [ConfigIssue(path: path, reason: reason)], warnings: warnings)
        }
        var document = payload
        var root: RemoteJSON
        do {
            root = try RemoteJSONParser.parse(payload)
        } catch {
            return rejected("$", "not a JSON document: \(error)")
        }
        var r = Reader()
        switch ConfigSigning.unwrap(root) {
        case .none:
            if verifier != nil {
                return rejected(
                    "$", "unsigned document; this gateway applies only documents signed with its public key")
            }
        case .some(nil):
            return rejected("$", "signed document: \"document\" and \"signature\" must be base64 strings")
        case .some(let parts?):
            document = parts.document
            if let verifier {
                guard let signedFor = parts.address else {
                    return rejected(
                        "$.target",
                        "signed without a target and layer (an older `config push`): sign it "
                            + "again, so the signature says which gateway and layer it is for")
                }
                let message = ConfigSigning.signedMessage(signedFor, parts.document)
                guard verifier.isValid(parts.signature, for: message) else {
                    return rejected("$.signature", "does not verify with this gateway's public key")
                }
                if let address, signedFor != address {
                    return rejected(
                        "$.target",
                        "signed for \(signedFor) (\(signedFor.layer) layer), not for "
                            + "\(address) (\(address.layer) layer); refused")
                }
            } else {
                r.warnings.append(
                    ConfigIssue(path: "$.signature", reason: "not checked: this gateway has no public key"))
            }
            do {
                root = try RemoteJSONParser.parse(parts.document)
            } catch {
                return rejected("$.document", "not a JSON document: \(error)", r.warnings)
            }
        }
        let overlay = r.document(root)
        if verifier != nil, r.errors.isEmpty, overlay.version == nil {
            r.error("$.version", "required in signed documents (a lower version than the one in force is refused)")
        }
        if overlay.delete, r.errors.isEmpty, overlay != RemoteConfigOverlay.tombstone(overlay.version) {
            r.error("$.delete", "a tombstone carries only \"version\" and \"delete\": true")
        }
        return Verdict(
            overlay: r.errors.isEmpty ? overlay : nil, errors: r.errors, warnings: r.warnings,
            document: document)
    }

    private struct Reader {
        var errors: [ConfigIssue] = []
        var warnings: [ConfigIssue] = []

        mutating func error(_ path: String, _ reason: String) { errors.append(ConfigIssue(path: path, reason: reason)) }

        mutating func document(_ root: RemoteJSON) -> RemoteConfigOverlay {
            var o = RemoteConfigOverlay()
            guard case .object(let top) = root else {
                error("$", "expected an object, found \(root.typeName)")
                return o
            }
            for (key, value) in top {
                let p = "$.\(key)"
                switch key {
                case "version":
                    o.version = int(value, p, 0...Int(Int32.max))
                case "delete":
                    switch bool(value, p) {
                    case true?: o.delete = true
                    case false?: error(p, "only true: a tombstone deletes")
                    case nil: break
                    }
                case "scan":
                    for (k, v) in object(value, p) {
                        let kp = "\(p).\(k)"
                        switch k {
                        case "active": o.scanActive = bool(v, kp)
                        case "interval_ms": o.scanIntervalMS = double(v, kp, 2.5...10240)
                        case "window_ms": o.scanWindowMS = double(v, kp, 2.5...10240)
                        case "filters": o.scanFilters = filters(v, kp)
                        default: warnings.append(ConfigIssue(path: kp, reason: "unknown key, ignored"))
                        }
                    }
                case "publishing":
                    for (k, v) in object(value, p) {
                        let kp = "\(p).\(k)"
                        switch k {
                        case "ranging_interval_s": o.rangingIntervalSeconds = double(v, kp, 0.1...3600)
                        case "health_interval_s": o.healthIntervalSeconds = double(v, kp, 1...86400)
                        case "raw_advertisements": o.rawAdvertisements = bool(v, kp)
                        case "raw_max_per_s": o.rawMaxPerSecond = double(v, kp, 0.1...10000)
                        case "sample_expiry_s": error(kp, "local only: it is fixed when the gateway starts")
                        default: warnings.append(ConfigIssue(path: kp, reason: "unknown key, ignored"))
                        }
                    }
                case "log":
                    for (k, v) in object(value, p) {
                        let kp = "\(p).\(k)"
                        switch k {
                        case "level":
                            if let s = string(v, kp) {
                                if RemoteConfigDocument.logLevels.contains(s) {
                                    o.logLevel = s
                                } else {
                                    let levels = RemoteConfigDocument.logLevels.joined(separator: ", ")
                                    error(kp, "expected one of \(levels), found \"\(s)\"")
                                }
                            }
                        default: warnings.append(ConfigIssue(path: kp, reason: "unknown key, ignored"))
                        }
                    }
                case "regions":
                    o.regions = list(value, p) { y, item, path in try y.region(item, path) }
                    // Duplicate ids: the file reader's rule, over the whole list (its warnings were taken above).
                    if o.regions != nil,
                        viaFileReader(keepWarnings: false, { try $0.regions(Self.node(value), "regions") }) == nil
                    {
                        o.regions = nil
                    }
                case "peripherals":
                    o.peripherals = list(value, p) { y, item, path in try y.peripheral(item, path) }
                    if o.peripherals != nil,
                        viaFileReader(keepWarnings: false, { try $0.peripherals(Self.node(value), "peripherals") })
                            == nil
                    {
                        o.peripherals = nil
                    }
                case "homeassistant":
                    o.homeAssistant = viaFileReader(keepWarnings: true) {
                        try $0.homeAssistant(Self.node(value), "homeassistant")
                    }
                case "connections":
                    o.connections = numbers(value, p, GatewayConfiguration.Connections.keys)
                case "ranging":
                    o.ranging = numbers(value, p, GatewayConfiguration.Ranging.keys)
                    // The rule that spans keys, when the document gives both of a pair (else after merging the layers).
                    var r = GatewayConfiguration.Ranging()
                    for key in GatewayConfiguration.Ranging.keys { if let v = o.ranging[key.name] { key.set(&r, v) } }
                    let partner = ["near_below_m": "immediate_below_m", "forget_after_s": "unknown_after_s"]
                    if let (key, why) = r.problem, o.ranging[key] != nil, let other = partner[key],
                        o.ranging[other] != nil
                    {
                        error("\(p).\(key)", why)
                    }
                default:
                    if let why = RemoteConfigDocument.localOnly[key] {
                        error(p, "\(why); set it in the gateway's configuration file")
                    } else {
                        warnings.append(ConfigIssue(path: p, reason: "unknown key, ignored"))
                    }
                }
            }
            if let i = o.scanIntervalMS, let w = o.scanWindowMS, w > i {
                error("$.scan.window_ms", "the scan window (\(w) ms) must not exceed the interval (\(i) ms)")
            }
            return o
        }

        /// A list whose items the file's reader builds (regions, peripherals): one rule for both readers. Each item
        /// is read on its own, so every bad item is reported (the first problem in each). nil when any is bad.
        mutating func list<T>(
            _ v: RemoteJSON, _ p: String,
            _ item: (inout YAMLConfigurationReader, Node, String) throws -> T
        ) -> [T]? {
            guard case .array(let items) = v else {
                error(p, "expected a list, found \(v.typeName)")
                return nil
            }
            guard items.count <= RemoteConfigDocument.maxListCount else {
                error(p, "\(items.count) entries; at most \(RemoteConfigDocument.maxListCount)")
                return nil
            }
            var out: [T] = []
            var bad = false
            let name = String(p.dropFirst(2))
            for (n, element) in items.enumerated() {
                if let t = viaFileReader(keepWarnings: true, { try item(&$0, Self.node(element), "\(name)[\(n)]") }) {
                    out.append(t)
                } else {
                    bad = true
                }
            }
            return bad ? nil : out
        }

        /// Runs the file's reader over nodes built from JSON; its errors and warnings become JSON-path issues.
        mutating func viaFileReader<T>(
            keepWarnings: Bool,
            _ body: (inout YAMLConfigurationReader) throws -> T
        ) -> T? {
            var y = YAMLConfigurationReader()
            y.jsonTypes = true
            defer {
                if keepWarnings { warnings += y.warnings.map { ConfigIssue(path: "$.\($0.path)", reason: $0.message) } }
            }
            do {
                return try body(&y)
            } catch let e as ConfigurationError {
                error("$.\(e.path)", e.message)
            } catch {
                self.error("$", "\(error)")
            }
            return nil
        }

        /// A JSON value as the YAML reader's node: strings quoted, everything else plain (YAMLConfigurationReader's
        /// `jsonTypes` then tells them apart). Depth is bounded by the parser.
        static func node(_ v: RemoteJSON) -> Node {
            switch v {
            case .null: return .scalar(.init("null", .implicit, .plain))
            case .bool(let b): return .scalar(.init(b ? "true" : "false", .implicit, .plain))
            case .number(let d, let integer):
                let text = integer && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
                return .scalar(.init(text, .implicit, .plain))
            case .string(let s): return .scalar(.init(s, .implicit, .doubleQuoted))
            case .array(let items): return .sequence(.init(items.map(node)))
            case .object(let pairs):
                return .mapping(.init(pairs.map { (.scalar(.init($0.0, .implicit, .doubleQuoted)), node($0.1)) }))
            }
        }

        /// A section of number-valued keys through its table; unknown keys are warnings.
        mutating func numbers<S>(_ v: RemoteJSON, _ p: String, _ table: [ConfigNumberKey<S>]) -> [String: Double] {
            var out: [String: Double] = [:]
            for (k, value) in object(v, p) {
                let kp = "\(p).\(k)"
                guard let key = table.first(where: { $0.name == k }) else {
                    warnings.append(ConfigIssue(path: kp, reason: "unknown key, ignored"))
                    continue
                }
                let n =
                    key.whole
                    ? int(value, kp, Int(key.range.lowerBound)...Int(key.range.upperBound)).map(Double.init)
                    : double(value, kp, key.range)
                if let n { out[k] = n }
            }
            return out
        }

        mutating func object(_ v: RemoteJSON, _ p: String) -> [(String, RemoteJSON)] {
            guard case .object(let pairs) = v else {
                error(p, "expected an object, found \(v.typeName)")
                return []
            }
            return pairs
        }

        mutating func bool(_ v: RemoteJSON, _ p: String) -> Bool? {
            guard case .bool(let b) = v else {
                error(p, "expected true or false, found \(v.typeName)")
                return nil
            }
            return b
        }

        mutating func string(_ v: RemoteJSON, _ p: String) -> String? {
            guard case .string(let s) = v else {
                error(p, "expected a string, found \(v.typeName)")
                return nil
            }
            return s
        }

        mutating func int(_ v: RemoteJSON, _ p: String, _ range: ClosedRange<Int>) -> Int? {
            guard case .number(let d, let integer) = v, integer, d == d.rounded(), abs(d) < 1e15 else {
                error(p, "expected a whole number, found \(v.typeName)")
                return nil
            }
            guard range.contains(Int(d)) else {
                error(p, "\(Int(d)) is out of range \(range.lowerBound)…\(range.upperBound)")
                return nil
            }
            return Int(d)
        }

        mutating func double(_ v: RemoteJSON, _ p: String, _ range: ClosedRange<Double>) -> Double? {
            guard case .number(let d, _) = v else {
                error(p, "expected a number, found \(v.typeName)")
                return nil
            }
            guard range.contains(d) else {
                error(p, "\(d) is out of range \(range.lowerBound)…\(range.upperBound)")
                return nil
            }
            return d
        }

        mutating func filters(_ v: RemoteJSON, _ p: String) -> [String]? {
            guard case .array(let items) = v else {
                error(p, "expected a list, found \(v.typeName)")
                return nil
            }
            guard items.count <= 256 else {
                error(p, "\(items.count) filters; at most 256")
                return nil
            }
            var out: [String] = []
            for (n, item) in items.enumerated() {
                let ip = "\(p)[\(n)]"
                guard let s = string(item, ip) else { continue }
                do {
                    _ = try ScanFilter(parsing: [s])
                    out.append(s)
                } catch {
                    self.error(ip, "\(error)")
                }
            }
            return out
        }
    }
}

extension GatewayConfiguration {
    /// The keys remote configuration can set, plus the gateway id, as canonical JSON: keys sorted, no spaces,
    /// numbers with at most three decimals (six for `ranging`), regions and peripherals (and their characteristic
    /// lists) sorted by their canonical rendering. Its SHA-256 is the `hash` on `config/state`, so two gateways (or a
    /// gateway and `blegateway config get`) agree on it whatever order the documents were written in.
    public var canonicalRemoteJSON: [UInt8] {
        var o = JSONObjectWriter()
        o.raw("connections", CanonicalJSON.numbers(connections, Connections.keys, digits: 3))
        o.string("gateway", gateway.id)
        o.raw("homeassistant", CanonicalJSON.homeAssistant(homeAssistant))
        o.object("log") { $0.string("level", log.level) }
        o.object("publishing") {
            $0.number("health_interval_s", publishing.healthIntervalSeconds)
            $0.bool("raw_advertisements", publishing.rawAdvertisements)
            $0.number("raw_max_per_s", publishing.rawMaxPerSecond)
            $0.number("ranging_interval_s", publishing.rangingIntervalSeconds)
        }
        o.raw("peripherals", CanonicalJSON.set(peripherals.map(CanonicalJSON.peripheral)))
        // Six decimals: the filter's quiet acceleration is of the order of 1e-5.
        o.raw("ranging", CanonicalJSON.numbers(ranging, Ranging.keys, digits: 6))
        o.raw("regions", CanonicalJSON.set(regions.map(CanonicalJSON.region)))
        o.object("scan") {
            $0.bool("active", scan.active)
            var list: [UInt8] = [UInt8(ascii: "[")]
            for (n, f) in scan.filters.enumerated() {
                if n > 0 { list.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(f, to: &list)
            }
            list.append(UInt8(ascii: "]"))
            $0.raw("filters", list)
            $0.number("interval_ms", scan.intervalMS)
            $0.number("window_ms", scan.windowMS)
        }
        return o.finished
    }

    /// `sha256:` and the hex digest of `canonicalRemoteJSON`.
    public var effectiveHash: String { "sha256:" + ConfigDigest.hex(ConfigDigest.sha256(canonicalRemoteJSON)) }
}
