import Foundation
import Testing

@testable import BLEFleet

/// The one-pass reader the fleet service uses for its busiest payloads: what it accepts and refuses, checked
/// against Foundation's JSON parser on valid payloads and thousands of damaged ones, and its typed fields against
/// the `Decodable` forms they replace.
@Suite struct FleetJSONTests {
    static let beacon = Array(
        #"""
        {"run":"r1","seq":17,"ts":1795241773.25,"clock_synced":true,"id":"ibeacon-e2c56db5-1-2","kind":"ibeacon",\#
        "address":"c0:00:00:00:00:01","rssi":-67.5,"samples":9,"interval_s":1,"distance_m":2.25,"accuracy_m":0.5,\#
        "proximity":"near","name":"desk \u00e9\ud83d\ude00 \"tag\"","rssi_raw_mean":-68.1,"filter":{"name":"kalman",\#
        "sigma_db":[4,2.5e-1,{"x":null}]}}
        """#.utf8)

    @Test func aBeaconSummaryReadsAsItsDecodableFormDoes() throws {
        let j = try FleetJSON(Self.beacon)
        let flat = try FleetPayload.Beacon(j)
        let decoded = try JSONDecoder().decode(FleetPayload.Reading<FleetPayload.Beacon>.self, from: Data(Self.beacon))
        #expect(flat.id == decoded.body.id && flat.kind == decoded.body.kind && flat.address == decoded.body.address)
        #expect(flat.rssi == decoded.body.rssi && flat.samples == decoded.body.samples)
        #expect(flat.interval_s == decoded.body.interval_s && flat.distance_m == decoded.body.distance_m)
        #expect(flat.accuracy_m == decoded.body.accuracy_m && flat.proximity == decoded.body.proximity)
        #expect(flat.name == decoded.body.name && flat.name == "desk é😀 \"tag\"")
        let envelope = try FleetPayload.Envelope(j)
        #expect(envelope.run == "r1" && envelope.seq == 17 && envelope.ts == 1795241773.25 && envelope.clock_synced)
    }

    @Test func nullAndAbsentOptionalsAreNilAndTheLastWillsNullSeqReads() throws {
        let j = try FleetJSON(Array(#"{"run":"r","seq":null,"ts":1,"clock_synced":false,"rssi":null}"#.utf8))
        #expect(try j.double("rssi") == nil && j.double("distance_m") == nil)
        #expect(try FleetPayload.Envelope(j).seq == nil)
    }

    @Test(arguments: [
        (#"{"run":"r","ts":1,"clock_synced":true}"#, "", FleetJSON.Failure?.none),
        (#"{"ts":1,"clock_synced":true}"#, "", .missingField("run")),
        (#"{"run":5,"ts":1,"clock_synced":true}"#, "", .wrongType("run")),
        (#"{"run":"r","ts":"1","clock_synced":true}"#, "", .wrongType("ts")),
        (#"{"run":"r","ts":1,"clock_synced":1}"#, "", .wrongType("clock_synced")),
        (#"{"run":"r","seq":1.5,"ts":1,"clock_synced":true}"#, "", .wrongType("seq")),
        (#"{"run":"r","ts":1,"ts":2,"clock_synced":true}"#, "", .duplicateKey("ts")),
        (#"{"run":"r","t\u0073":1,"ts":2,"clock_synced":true}"#, "", .duplicateKey("ts")),
    ])
    func envelopeFieldsAreRequiredAndTyped(json: String, _: String, failure: FleetJSON.Failure?) {
        do {
            _ = try FleetPayload.Envelope(try FleetJSON(Array(json.utf8)))
            #expect(failure == nil, "\(json) was accepted")
        } catch let e as FleetJSON.Failure {
            #expect(e == failure, "\(json)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test(arguments: [
        "", " ", "[]", "\"x\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1}x", "{\"a\":01}", "{\"a\":1.}",
        "{\"a\":-}", "{\"a\":1e}", "{\"a\":tru}", "{\"a\":\"\u{01}\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":{\"b\"}}", "{\"a\":\"open}", "{'a':1}", "{\"a\":NaN}", "{\"a\":+1}",
        "{\"a\":\"\\ud83d\"}", "{\"a\":\"\\ude00\"}", "{\"a\":\"\\ud83d\\u0041\"}",
    ])
    func malformedDocumentsAreNotJSON(text: String) {
        #expect(throws: FleetJSON.Failure.self, "\(text.debugDescription)") { try FleetJSON(Array(text.utf8)) }
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] == nil,
            "Foundation accepts \(text.debugDescription) as an object: the list is wrong")
    }

    /// RFC 8259 has no trailing commas; Foundation's parser takes them, the reader does not (no gateway writes them).
    @Test(arguments: ["{\"a\":1,}", "{\"a\":[1,]}"])
    func trailingCommasAreRefused(text: String) {
        #expect(throws: FleetJSON.Failure.self) { try FleetJSON(Array(text.utf8)) }
    }

    @Test(arguments: [
        [0xC3, 0x28], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xC3],
    ])
    func malformedUTF8IsNotJSON(bad: [UInt8]) {
        let doc = Array(#"{"a":""#.utf8) + bad + Array(#""}"#.utf8)
        #expect(throws: FleetJSON.Failure.self) { try FleetJSON(doc) }
        #expect((try? JSONSerialization.jsonObject(with: Data(doc))) == nil)
    }

    @Test func nestingBeyondTheLimitIsRefusedWithoutRecursingForever() {
        let deep = "{\"a\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        #expect(throws: FleetJSON.Failure.self) { try FleetJSON(Array(deep.utf8)) }
    }

    /// Every truncation and thousands of single-byte changes of a real payload: the reader accepts exactly what
    /// Foundation's parser accepts as an object (duplicate keys aside, which Foundation resolves and we refuse).
    @Test func damagedPayloadsAreAcceptedExactlyWhenFoundationAcceptsThem() {
        var generator = SystemRandomNumberGenerator()
        var cases: [[UInt8]] = (0..<Self.beacon.count).map { Array(Self.beacon[..<$0]) }
        let alphabet = Array("{}[]\",:\\0123456789.eE+-tfnul aé\u{01}".utf8)
        for _ in 0..<5000 {
            var b = Self.beacon
            b[Int.random(in: 0..<b.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            cases.append(b)
        }
        var disagreements: [String] = []
        for b in cases {
            let ours = (try? FleetJSON(b)) != nil
            let theirs = (try? JSONSerialization.jsonObject(with: Data(b))) is [String: Any]
            if ours != theirs && !Self.hasDuplicateKeys(b) && !Self.hasTrailingComma(b) {
                disagreements.append(String(decoding: b, as: UTF8.self))
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count): \(disagreements.prefix(3))")
    }

    /// Refused for a duplicate key (which Foundation resolves by taking one of them).
    static func hasDuplicateKeys(_ b: [UInt8]) -> Bool {
        do {
            _ = try FleetJSON(b)
            return false
        } catch {
            if case .duplicateKey = error { return true }
            return false
        }
    }
}

extension FleetJSONTests {
    /// A comma, then (after white space) the end of an object or array.
    static func hasTrailingComma(_ b: [UInt8]) -> Bool {
        var lastSignificant: UInt8 = 0
        for c in b where c != 0x20 && c != 0x0A && c != 0x0D && c != 0x09 {
            if (c == UInt8(ascii: "}") || c == UInt8(ascii: "]")) && lastSignificant == UInt8(ascii: ",") {
                return true
            }
            lastSignificant = c
        }
        return false
    }
}
