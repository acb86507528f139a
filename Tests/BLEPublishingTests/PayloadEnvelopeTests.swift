import Foundation
import Testing

@testable import BLEPublishing

@Suite struct PayloadEnvelopeTests {
    @Test func splicesTheReadingsFieldsAfterTheEnvelope() throws {
        let out = PayloadEnvelope.render(
            run: "a1b2", seq: 42, ts: 1_732_170_000.125, clockSynced: true, body: Array(#"{"rssi":-61,"count":3}"#.utf8)
        )
        #expect(
            String(decoding: out, as: UTF8.self)
                == #"{"run":"a1b2","seq":42,"ts":1732170000.125,"clock_synced":true,"rssi":-61,"count":3}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any]
        #expect(parsed?["seq"] as? Int == 42)
    }

    @Test func anEmptyBodyGivesTheEnvelopeAlone() {
        let out = PayloadEnvelope.render(run: "r", seq: 1, ts: 0.5, clockSynced: false, body: Array("{ }".utf8))
        #expect(String(decoding: out, as: UTF8.self) == #"{"run":"r","seq":1,"ts":0.500,"clock_synced":false}"#)
    }

    @Test func timestampsKeepMilliseconds() {
        #expect(PayloadEnvelope.formatTimestamp(12.0) == "12.000")
        #expect(PayloadEnvelope.formatTimestamp(12.0405) == "12.041")
    }
}
