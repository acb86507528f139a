import Yams

/// A YAML (or JSON) document as plain values, for the readers that walk `[String: Any]`: the site description that
/// arrives on `<prefix>/fleet/site` (anyone with publish access writes it) and the fleet's settings file.
///
/// Not `Yams.load`: its constructor force-unwraps every mapping key as text, so a document with a key that is itself
/// a mapping or a list (`{a: 1}: 2`, `? [x]`) stops the whole fleet service (found by `make fuzz`'s FleetParsers).
/// Here the tree is composed, every key checked to be text, and each scalar left to Yams' own type resolution (an
/// int, a float, a bool, a string, as `load` would give).
enum YAMLTree {
    struct Failure: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "\(path): \(reason)" }
    }

    /// Deeper than this is refused: the readers' documents nest four levels, and the conversion recurses.
    static let maximumDepth = 64

    /// The document's root (nil for an empty document). `path` names the document in errors.
    static func load(_ text: String, path: String) throws -> Any? {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw Failure(path: path, reason: "not YAML or JSON: \(error)")
        }
        return try root.map { try value($0, path, depth: 0) }
    }

    private static func value(_ node: Node, _ path: String, depth: Int) throws -> Any {
        guard depth < maximumDepth else {
            throw Failure(path: path, reason: "nested more than \(maximumDepth) levels deep")
        }
        switch node {
        case .scalar:
            return Constructor.default.any(from: node)
        case .sequence(let sequence):
            return try sequence.enumerated().map { try value($1, "\(path)[\($0)]", depth: depth + 1) }
        case .mapping(let mapping):
            var out: [String: Any] = [:]
            for (key, v) in mapping {
                guard case .scalar(let k) = key else {
                    throw Failure(path: path, reason: "a key that is not text (a mapping or a list used as a key)")
                }
                guard out[k.string] == nil else { throw Failure(path: "\(path).\(k.string)", reason: "duplicate key") }
                out[k.string] = try value(v, "\(path).\(k.string)", depth: depth + 1)
            }
            return out
        }
    }
}
