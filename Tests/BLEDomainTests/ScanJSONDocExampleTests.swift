import BLEHCI
import Foundation
import Testing

@testable import BLEDomain

/// The examples in docs/SCAN_JSON.md are produced by the encoder; these tests keep the document honest.
@Suite struct ScanJSONDocExampleTests {
    static let examplesFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/SCAN_JSON.md")

    static func documentedLines() throws -> [String] {
        let text = try String(contentsOf: examplesFile, encoding: .utf8)
        return text.split(separator: "\n").filter { $0.hasPrefix("{\"ts\":") }.map(String.init)
    }

    @Test func everyExampleLineIsWhatTheEncoderWritesForItsVector() throws {
        let vectors = [
            Vectors.iBeacon, Vectors.eddystoneUID, Vectors.eddystoneURL, Vectors.eddystoneTLM, Vectors.altBeacon,
            Vectors.heartRate, Vectors.eddystoneETLM, Vectors.eddystoneEID,
        ]
        let produced = vectors.map { Vectors.sightings(fromH4: Vectors.legacyEvent(data: $0))[0].jsonLine }
        let documented = try Self.documentedLines()
        #expect(documented == produced)
    }
}
