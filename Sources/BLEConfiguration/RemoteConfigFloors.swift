import BLETransport
import Crypto
import Foundation

/// Per layer, the highest version a signed document or tombstone brought into force, with the SHA-256 of that
/// document's bytes. A signed document below its layer's floor is a replay and refused; one at the floor applies only
/// if it is the same document (a retained message sent again), so two documents can never share a version.
///
/// The floor only rises. It is kept apart from the stored layers, in two copies (`remote-config.floor.json` and
/// `remote-config.floor.2.json`), each replaced with write, fsync and rename: a damaged stored layer, or one damaged
/// copy, loses no floor. Reading takes the higher floor of every copy (and of every stored layer) that reads.
package struct RemoteConfigFloors: Sendable, Equatable {
    package init() {}

    package struct Floor: Sendable, Equatable {
        package var version: Int
        /// Hex SHA-256 of the document's bytes (inside the signed form).
        package var digest: String
    }

    package var layers: [RemoteConfigLayer: Floor] = [:]

    static let fileNames = ["remote-config.floor.json", "remote-config.floor.2.json"]

    static func digest(_ document: [UInt8]) -> String {
        SHA256.hash(data: document).map { String(format: "%02x", $0) }.joined()
    }

    /// Why `version` of `document` may not apply on `layer`, or nil when it may.
    package func refusal(_ layer: RemoteConfigLayer, version: Int, document: [UInt8]) -> ConfigIssue? {
        guard let floor = layers[layer] else { return nil }
        if version < floor.version {
            return ConfigIssue(
                path: "$.version",
                reason: "\(version) is lower than version \(floor.version), the "
                    + "highest this gateway applied on the \(layer) layer; refused (replay)")
        }
        if version == floor.version && Self.digest(document) != floor.digest {
            return ConfigIssue(
                path: "$.version",
                reason: "version \(version) was applied on the \(layer) layer "
                    + "with other content; a changed document needs a higher version")
        }
        return nil
    }

    /// Raises `layer`'s floor (never lowers it).
    package mutating func raise(_ layer: RemoteConfigLayer, version: Int, document: [UInt8]) {
        if let f = layers[layer], f.version >= version { return }
        layers[layer] = Floor(version: version, digest: Self.digest(document))
    }

    /// The higher of two floors per layer.
    mutating func merge(_ other: RemoteConfigFloors) {
        for (layer, f) in other.layers where (layers[layer]?.version ?? Int.min) < f.version { layers[layer] = f }
    }

    var encoded: [UInt8] {
        var o = JSONObjectWriter()
        for layer in [RemoteConfigLayer.fleet, .gateway] {
            guard let f = layers[layer] else { continue }
            o.object(layer.rawValue) { l in
                l.int("version", f.version)
                l.string("sha256", f.digest)
            }
        }
        return o.finished
    }

    static func decode(_ bytes: [UInt8]) -> RemoteConfigFloors? {
        guard case .object(let top)? = try? RemoteJSONParser.parse(bytes) else { return nil }
        var floors = RemoteConfigFloors()
        for (name, value) in top {
            guard case .object(let fields) = value,
                case .number(let v, integer: true)? = fields.first(where: { $0.0 == "version" })?.1,
                case .string(let d)? = fields.first(where: { $0.0 == "sha256" })?.1,
                d.utf8.count == 64
            else { return nil }
            floors.layers[RemoteConfigLayer(rawValue: name)] = Floor(version: Int(v), digest: d)
        }
        return floors
    }

    /// The floors every readable copy in `directory` holds, and a line for each copy that exists but does not read.
    package static func load(_ directory: String) -> (floors: RemoteConfigFloors, damaged: [String]) {
        var floors = RemoteConfigFloors()
        var damaged: [String] = []
        for name in fileNames {
            let path = "\(directory)/\(name)"
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            if let f = decode([UInt8](data)) { floors.merge(f) } else { damaged.append(path) }
        }
        return (floors, damaged)
    }

    /// Both copies, one after the other: a crash between them leaves one new and one old, and reading takes the max.
    package func save(_ directory: String) throws {
        for name in Self.fileNames { try DurableFile.replace("\(directory)/\(name)", with: encoded) }
    }
}
