import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `config/gateway.yaml` promises every key with its default. The keys the reader knows are taken from the reader's
/// own source (each key is a `case "name":` of a switch over a mapping, or a row of a `ConfigNumberKey` table), so a
/// key added to the reader without a line in the example fails here, whoever adds it.
@Suite struct ExampleConfigurationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")

    /// Key names in the reader's sources. Switches over scalar values (`case "true", "yes", "on": return true`)
    /// return on the label's line; switches over keys assign or call, so lines that `return` are skipped.
    static func keysTheReaderKnows() throws -> Set<String> {
        let dir = root.appendingPathComponent("Sources/BLEConfiguration")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix("YAMLConfigurationReader") || $0 == "ConfigNumberKeys.swift"
        }
        let label = try Regex(#"case ("[a-z0-9_]+"(?:, "[a-z0-9_]+")*):"#)
        let row = try Regex(#"\.init\("([a-z0-9_]+)""#)
        let name = try Regex(#""([a-z0-9_]+)""#)
        var keys: Set<String> = []
        for file in files {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let m = line.firstMatch(of: label), !line[m.range.upperBound...].contains("return") {
                    for n in line[m.range].matches(of: name) {
                        keys.insert(String(line[n.range].dropFirst().dropLast()))
                    }
                }
                for m in line.matches(of: row) { keys.insert(String(line[m.range].dropFirst(7).dropLast())) }
            }
        }
        return keys
    }

    @Test func everyKeyTheReaderKnowsAppearsInTheExample() throws {
        let keys = try Self.keysTheReaderKnows()
        // A sanity floor: the scan found the reader (a renamed file would otherwise make this pass vacuously).
        #expect(keys.isSuperset(of: ["gateway", "spool", "path_loss_exponent", "handback_s", "exit_dwell_s"]))
        let example = try String(contentsOf: Self.root.appendingPathComponent("config/gateway.yaml"), encoding: .utf8)
        // A key is shown when it starts a mapping entry, live or commented out, block or flow style.
        let missing = try keys.filter { key in
            example.firstMatch(of: try Regex("(^|[\\s{,#-])\(key):").anchorsMatchLineEndings()) == nil
        }
        #expect(missing.isEmpty, "keys the reader knows but config/gateway.yaml does not show: \(missing.sorted())")
    }

    @Test func theExampleShowsTheDefaults() throws {
        let example = try String(contentsOf: Self.root.appendingPathComponent("config/gateway.yaml"), encoding: .utf8)
        var r = YAMLConfigurationReader()
        #expect(try r.read(example) == GatewayConfiguration())
    }
}
