import BLEConfiguration
import BLETransport
import Foundation

/// The two remote layers over the local file, and what is in force. Precedence: local file < fleet document <
/// this gateway's document, key by key. Each layer is replaced whole by a new accepted document; a rejected one
/// leaves the layer (and everything in force) as it was. Without a public key an empty payload (the retained topic
/// deleted) clears the layer; with one, only a signed tombstone does, and every layer keeps a version floor that
/// only rises (RemoteConfigFloors). Accepted layers are stored in `directory` (beside the spool, written with write,
/// fsync and rename) so a restart without a broker comes back with them. Only documents that passed validation are
/// ever stored, so a poison document cannot crash-loop the gateway: it is refused again on each start, while the
/// stored layers stay in force; a stored layer that no longer reads is set aside (`.damaged`), its floor kept.
public final class RemoteConfigController: Sendable {
    public struct Outcome: Sendable, Equatable {
        public enum Status: String, Sendable { case applied, rejected, cleared }
        public var status: Status
        public var layer: RemoteConfigLayer
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
        var layers: [RemoteConfigLayer: Stored] = [:]
        /// The last payload seen per layer, to ignore the broker re-sending a retained message after a reconnect.
        var lastSeen: [RemoteConfigLayer: [UInt8]] = [:]
        var effective: GatewayConfiguration
        /// With a public key: the version floors, as persisted.
        var floors = RemoteConfigFloors()
    }

    public let local: GatewayConfiguration
    let directory: String?
    let verifier: ConfigSigning.Verifier?
    private let state: Locked<State>
    /// What the start found wrong in the store (damaged files set aside, superseded layers dropped), to be logged.
    public let startupProblems: [String]

    /// - Parameter directory: where accepted layers are kept (`remote-config.<layer>.json`) with the version floors;
    ///   nil keeps nothing. Stored layers are read here, and validated again.
    ///   - verifier: when set, only signed documents for this gateway apply, under the version floors.
    public init(local: GatewayConfiguration, directory: String?, verifier: ConfigSigning.Verifier? = nil) {
        self.local = local
        self.directory = directory
        self.verifier = verifier
        var s = State(effective: local)
        var problems: [String] = []
        var damagedCopies = false
        if verifier != nil, let directory {
            let (floors, damaged) = RemoteConfigFloors.load(directory)
            s.floors = floors
            damagedCopies = !damaged.isEmpty
            problems += damaged.map {
                "\($0): a damaged copy of the version floors; the other copy and the stored "
                    + "layers still hold them"
            }
        }
        let loaded = s.floors
        for layer in [RemoteConfigLayer.fleet, .gateway] {
            guard let path = Self.path(directory, layer), let data = FileManager.default.contents(atPath: path) else {
                continue
            }
            let bytes = [UInt8](data)
            let verdict = RemoteConfigDocument.read(
                bytes, verifier: verifier,
                address: .init(layer: layer, gatewayID: local.gateway.id))
            guard let overlay = verdict.overlay, !overlay.delete else {
                // Kept for a post-mortem, out of the way of the next start; the floor is in its own files.
                _ = rename(path, path + ".damaged")
                let why = verdict.errors.first.map(\.description) ?? "a tombstone"
                problems.append("\(path): the stored \(layer) layer does not read (\(why)); set aside as .damaged")
                continue
            }
            if verifier != nil, let v = overlay.version {
                if let refusal = s.floors.refusal(layer, version: v, document: verdict.document) {
                    // A newer document or tombstone raised the floor and the stop came before this file was replaced.
                    try? DurableFile.remove(path)
                    problems.append("\(path): superseded (\(refusal.reason)); removed")
                    continue
                }
                s.floors.raise(layer, version: v, document: verdict.document)
            }
            s.layers[layer] = Stored(payload: bytes, overlay: overlay)
        }
        if verifier != nil, let directory, s.floors != loaded || damagedCopies {  // a damaged copy is rewritten
            do { try s.floors.save(directory) } catch { problems.append("cannot keep the version floors: \(error)") }
        }
        if let merged = Self.merge(local, s.layers) { s.effective = merged } else { s.layers = [:] }
        state = Locked(s)
        startupProblems = problems
    }

    /// With a public key: each layer's version floor (the highest version applied or deleted on it).
    public var floors: [RemoteConfigLayer: (version: Int, sha256: String)] {
        state.withLock { $0.floors.layers.mapValues { ($0.version, $0.digest) } }
    }

    /// Whether only signed documents apply (a public key is set).
    public var signedOnly: Bool { verifier != nil }

    /// The configuration in force.
    public var effective: GatewayConfiguration { state.withLock { $0.effective } }

    /// Versions of the layers in force.
    public var versions: [RemoteConfigLayer: Int?] { state.withLock { s in s.layers.mapValues { $0.overlay.version } } }

    /// Layers for which the broker has sent something since start (an empty payload counts).
    public var seenLayers: Set<RemoteConfigLayer> { state.withLock { Set($0.lastSeen.keys) } }

    /// Which layers are in force (from the broker or the local store).
    public var layersInForce: [RemoteConfigLayer] {
        state.withLock { s in [RemoteConfigLayer.fleet, .gateway].filter { s.layers[$0] != nil } }
    }

    /// A document arrived on `layer`'s topic. Returns nil when it is the same payload as last time (the broker
    /// re-sends retained messages after every reconnect).
    public func receive(_ layer: RemoteConfigLayer, payload: [UInt8]) -> Outcome? {
        state.withLock { s -> Outcome? in
            guard s.lastSeen[layer] != payload else { return nil }
            s.lastSeen[layer] = payload
            func rejected(_ issues: [ConfigIssue], _ version: Int? = nil, _ warnings: [ConfigIssue] = []) -> Outcome {
                Outcome(
                    status: .rejected, layer: layer, version: version, errors: issues, warnings: warnings,
                    effective: s.effective)
            }
            if payload.isEmpty {
                if verifier != nil {
                    // Anyone with publish access can clear a retained topic; that must not clear a signed layer.
                    return rejected([
                        ConfigIssue(
                            path: "$",
                            reason: "an empty message does not delete a layer on a "
                                + "gateway with a public key; a signed tombstone does (config push --delete --sign)")
                    ])
                }
                let had = s.layers.removeValue(forKey: layer) != nil
                s.effective = Self.merge(local, s.layers) ?? local
                if had { store(layer, nil) }
                return Outcome(
                    status: .cleared, layer: layer, version: nil, errors: [], warnings: [],
                    effective: s.effective)
            }
            let verdict = RemoteConfigDocument.read(
                payload, verifier: verifier,
                address: .init(layer: layer, gatewayID: local.gateway.id))
            guard let overlay = verdict.overlay else { return rejected(verdict.errors, nil, verdict.warnings) }
            var floors = s.floors
            if verifier != nil, let v = overlay.version {
                if let refusal = floors.refusal(layer, version: v, document: verdict.document) {
                    return rejected([refusal], v, verdict.warnings)
                }
                floors.raise(layer, version: v, document: verdict.document)
            }
            var layers = s.layers
            layers[layer] = overlay.delete ? nil : Stored(payload: payload, overlay: overlay)
            guard let merged = Self.merge(local, layers) else {
                let issue =
                    Self.conflict(Self.candidate(local, layers))
                    ?? ConfigIssue(path: "$", reason: "conflicts with the other layers")
                return rejected(
                    [ConfigIssue(path: issue.path, reason: "with the other layers " + issue.reason)],
                    overlay.version, verdict.warnings)
            }
            // The floor is on disk before the layer changes: a crash in between leaves a stored layer below the
            // floor, which the next start drops, never a layer whose floor was lost.
            if floors != s.floors, let directory {
                do {
                    try floors.save(directory)
                } catch {
                    return rejected(
                        [
                            ConfigIssue(
                                path: "$.version",
                                reason: "cannot keep the version floor (\(error)); "
                                    + "not applied")
                        ], overlay.version, verdict.warnings)
                }
            }
            s.floors = floors
            let had = s.layers[layer] != nil
            s.layers = layers
            s.effective = merged
            if overlay.delete {
                if had { store(layer, nil) }
                return Outcome(
                    status: .cleared, layer: layer, version: overlay.version, errors: [],
                    warnings: verdict.warnings, effective: merged)
            }
            store(layer, payload)
            return Outcome(
                status: .applied, layer: layer, version: overlay.version, errors: [],
                warnings: verdict.warnings, effective: merged)
        }
    }

    static func candidate(_ local: GatewayConfiguration, _ layers: [RemoteConfigLayer: Stored]) -> GatewayConfiguration
    {
        var c = local
        for layer in [RemoteConfigLayer.fleet, .gateway] { layers[layer]?.overlay.apply(to: &c) }
        return c
    }

    /// The layers over the local file, or nil when the result breaks a rule that spans keys.
    static func merge(_ local: GatewayConfiguration, _ layers: [RemoteConfigLayer: Stored]) -> GatewayConfiguration? {
        let c = candidate(local, layers)
        return conflict(c) == nil ? c : nil
    }

    /// A rule spanning keys that a merged configuration breaks (each layer may be valid on its own).
    static func conflict(_ c: GatewayConfiguration) -> ConfigIssue? {
        if c.scan.windowMS > c.scan.intervalMS {
            return ConfigIssue(
                path: "$.scan.window_ms",
                reason: "the scan window (\(c.scan.windowMS) ms) would exceed "
                    + "the interval (\(c.scan.intervalMS) ms)")
        }
        if let (key, why) = c.ranging.problem { return ConfigIssue(path: "$.ranging.\(key)", reason: why) }
        return nil
    }

    static func path(_ directory: String?, _ layer: RemoteConfigLayer) -> String? {
        directory.map { "\($0)/remote-config.\(layer.rawValue).json" }
    }

    /// Written to a temporary file, fsync'd and renamed (DurableFile), so a power cut leaves the old document or the
    /// new one. A failure leaves the layer in force in memory; the floor, already on disk, still refuses replays.
    private func store(_ layer: RemoteConfigLayer, _ payload: [UInt8]?) {
        guard let path = Self.path(directory, layer) else { return }
        guard let payload else {
            try? DurableFile.remove(path)
            return
        }
        try? DurableFile.replace(path, with: payload)
    }
}
