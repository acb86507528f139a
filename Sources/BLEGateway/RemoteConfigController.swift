import BLETransport
import Foundation

/// The two remote layers over the local file, and what is in force. Precedence: local file < fleet document <
/// this gateway's document, key by key. Each layer is replaced whole by a new accepted document; a rejected one
/// leaves the layer (and everything in force) as it was; an empty payload (the retained topic deleted) clears the
/// layer. Accepted layers are stored in `directory` (beside the spool) so a restart without a broker comes back
/// with them. Only documents that passed validation are ever stored, so a poison document cannot crash-loop the
/// gateway: it is refused again on each start, while the stored layers stay in force.
public final class RemoteConfigController: Sendable {
    public struct Layer: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let fleet = Layer(rawValue: "fleet")
        public static let gateway = Layer(rawValue: "gateway")
        public var description: String { rawValue }
    }

    public struct Outcome: Sendable, Equatable {
        public enum Status: String, Sendable { case applied, rejected, cleared }
        public var status: Status
        public var layer: Layer
        /// The version the document carried (nil for none, or a cleared layer).
        public var version: Int?
        public var errors: [ConfigIssue]
        public var warnings: [ConfigIssue]
        /// What is in force after this document (unchanged when rejected).
        public var effective: GatewayConfiguration
    }

    struct Stored: Sendable {
        var payload: [UInt8]
        var overlay: RemoteConfigOverlay
    }

    struct State: Sendable {
        var layers: [Layer: Stored] = [:]
        /// The last payload seen per layer, to ignore the broker re-sending a retained message after a reconnect.
        var lastSeen: [Layer: [UInt8]] = [:]
        var effective: GatewayConfiguration
    }

    public let local: GatewayConfiguration
    let directory: String?
    let verifier: ConfigSigning.Verifier?
    private let state: Locked<State>

    /// - Parameter directory: where accepted layers are kept (`remote-config.<layer>.json`); nil keeps nothing.
    ///   Stored layers are read here, and validated again (a damaged file is ignored and removed).
    ///   - verifier: when set, only signed documents apply, and never one with a lower version than the layer's.
    public init(local: GatewayConfiguration, directory: String?, verifier: ConfigSigning.Verifier? = nil) {
        self.local = local
        self.directory = directory
        self.verifier = verifier
        var s = State(effective: local)
        for layer in [Layer.fleet, .gateway] {
            guard let path = Self.path(directory, layer), let data = FileManager.default.contents(atPath: path) else {
                continue
            }
            let bytes = [UInt8](data)
            if let overlay = RemoteConfigDocument.read(bytes, verifier: verifier).overlay {
                s.layers[layer] = Stored(payload: bytes, overlay: overlay)
            } else {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        if let merged = Self.merge(local, s.layers) { s.effective = merged } else { s.layers = [:] }
        state = Locked(s)
    }

    /// The configuration in force.
    public var effective: GatewayConfiguration { state.withLock { $0.effective } }

    /// Versions of the layers in force.
    public var versions: [Layer: Int?] { state.withLock { s in s.layers.mapValues { $0.overlay.version } } }

    /// Layers for which the broker has sent something since start (an empty payload counts).
    public var seenLayers: Set<Layer> { state.withLock { Set($0.lastSeen.keys) } }

    /// Which layers are in force (from the broker or the local store).
    public var layersInForce: [Layer] { state.withLock { s in [Layer.fleet, .gateway].filter { s.layers[$0] != nil } } }

    /// A document arrived on `layer`'s topic. Returns nil when it is the same payload as last time (the broker
    /// re-sends retained messages after every reconnect).
    public func receive(_ layer: Layer, payload: [UInt8]) -> Outcome? {
        state.withLock { s -> Outcome? in
            guard s.lastSeen[layer] != payload else { return nil }
            s.lastSeen[layer] = payload
            if payload.isEmpty {
                let had = s.layers.removeValue(forKey: layer) != nil
                s.effective = Self.merge(local, s.layers) ?? local
                if had { store(layer, nil) }
                return Outcome(status: .cleared, layer: layer, version: nil, errors: [], warnings: [],
                               effective: s.effective)
            }
            let verdict = RemoteConfigDocument.read(payload, verifier: verifier)
            guard let overlay = verdict.overlay else {
                return Outcome(status: .rejected, layer: layer, version: nil, errors: verdict.errors,
                               warnings: verdict.warnings, effective: s.effective)
            }
            if verifier != nil, let v = overlay.version, let current = s.layers[layer]?.overlay.version, v < current {
                return Outcome(status: .rejected, layer: layer, version: v, errors: [ConfigIssue(path: "$.version",
                               reason: "\(v) is lower than version \(current) in force; refused (replay)")],
                               warnings: verdict.warnings, effective: s.effective)
            }
            var layers = s.layers
            layers[layer] = Stored(payload: payload, overlay: overlay)
            guard let merged = Self.merge(local, layers) else {
                let issue = Self.conflict(Self.candidate(local, layers))
                    ?? ConfigIssue(path: "$", reason: "conflicts with the other layers")
                return Outcome(status: .rejected, layer: layer, version: overlay.version,
                               errors: [ConfigIssue(path: issue.path, reason: "with the other layers " + issue.reason)],
                               warnings: verdict.warnings, effective: s.effective)
            }
            s.layers = layers
            s.effective = merged
            store(layer, payload)
            return Outcome(status: .applied, layer: layer, version: overlay.version, errors: [],
                           warnings: verdict.warnings, effective: merged)
        }
    }

    static func candidate(_ local: GatewayConfiguration, _ layers: [Layer: Stored]) -> GatewayConfiguration {
        var c = local
        for layer in [Layer.fleet, .gateway] { layers[layer]?.overlay.apply(to: &c) }
        return c
    }

    /// The layers over the local file, or nil when the result breaks a rule that spans keys.
    static func merge(_ local: GatewayConfiguration, _ layers: [Layer: Stored]) -> GatewayConfiguration? {
        let c = candidate(local, layers)
        return conflict(c) == nil ? c : nil
    }

    /// A rule spanning keys that a merged configuration breaks (each layer may be valid on its own).
    static func conflict(_ c: GatewayConfiguration) -> ConfigIssue? {
        if c.scan.windowMS > c.scan.intervalMS {
            return ConfigIssue(path: "$.scan.window_ms", reason: "the scan window (\(c.scan.windowMS) ms) would exceed "
                               + "the interval (\(c.scan.intervalMS) ms)")
        }
        if let (key, why) = c.ranging.problem { return ConfigIssue(path: "$.ranging.\(key)", reason: why) }
        return nil
    }

    static func path(_ directory: String?, _ layer: Layer) -> String? {
        directory.map { "\($0)/remote-config.\(layer.rawValue).json" }
    }

    /// Written to a temporary file and renamed, so a power cut leaves the old document or the new one.
    private func store(_ layer: Layer, _ payload: [UInt8]?) {
        guard let path = Self.path(directory, layer) else { return }
        guard let payload else {
            try? FileManager.default.removeItem(atPath: path)
            return
        }
        let tmp = path + ".tmp"
        guard FileManager.default.createFile(atPath: tmp, contents: Data(payload)) else { return }
        _ = rename(tmp, path)
    }
}
