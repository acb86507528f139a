import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

@Suite struct RemoteConfigDocumentTests {
    static func read(_ text: String) -> RemoteConfigDocument.Verdict { RemoteConfigDocument.read(Array(text.utf8)) }

    // FIPS 180-2 Appendix B examples (B.1 one block, B.2 two blocks) and the empty message.
    @Test func sha256MatchesTheFIPSExamples() {
        #expect(
            ConfigDigest.hex(ConfigDigest.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            ConfigDigest.hex(
                ConfigDigest.sha256(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            ConfigDigest.hex(ConfigDigest.sha256([]))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // B.3: one million 'a', crossing many blocks.
        #expect(
            ConfigDigest.hex(ConfigDigest.sha256([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func aFullDocumentSetsEveryRemoteKey() {
        let v = Self.read(
            """
            {"version": 7, "scan": {"active": true, "interval_ms": 200, "window_ms": 50.5, "filters": ["uuid:FEAA", "rssi:-80"]},
             "publishing": {"ranging_interval_s": 2, "health_interval_s": 10, "raw_advertisements": true, "raw_max_per_s": 5},
             "log": {"level": "debug"}}
            """)
        #expect(v.errors == [])
        #expect(v.warnings == [])
        var c = GatewayConfiguration()
        v.overlay?.apply(to: &c)
        #expect(v.overlay?.version == 7)
        #expect(c.scan.active && c.scan.intervalMS == 200 && c.scan.windowMS == 50.5)
        #expect(c.scan.filters == ["uuid:FEAA", "rssi:-80"])
        #expect(c.publishing.rangingIntervalSeconds == 2 && c.publishing.healthIntervalSeconds == 10)
        #expect(c.publishing.rawAdvertisements && c.publishing.rawMaxPerSecond == 5)
        #expect(c.log.level == "debug")
    }

    @Test func unknownKeysAreWarningsNotRejections() {
        let v = Self.read(#"{"scan": {"active": true, "colour": "red"}, "regions": [], "frobnicate": 1}"#)
        #expect(v.errors == [])
        #expect(v.overlay?.scanActive == true)
        #expect(v.overlay?.regions == [])
        #expect(v.warnings.map(\.path) == ["$.scan.colour", "$.frobnicate"])
        #expect(v.warnings[0].reason.contains("unknown key"))
    }

    @Test func anEscapedStringIsDecoded() {
        let v = Self.read(#"{"scan": {"filters": ["name:K\u00fcche \ud83d\ude00\n"]}}"#)
        #expect(v.overlay?.scanFilters == ["name:Küche 😀\n"])
    }

    @Test func theHashIgnoresKeyOrderAndFollowsValues() {
        var a = GatewayConfiguration()
        Self.read(#"{"scan": {"active": true, "window_ms": 20}, "log": {"level": "error"}}"#).overlay?.apply(to: &a)
        var b = GatewayConfiguration()
        Self.read(#"{"log": {"level": "error"}, "scan": {"window_ms": 20.0, "active": true}}"#).overlay?.apply(to: &b)
        #expect(a.effectiveHash == b.effectiveHash)
        #expect(a.effectiveHash.hasPrefix("sha256:") && a.effectiveHash.count == 7 + 64)
        #expect(a.effectiveHash != GatewayConfiguration().effectiveHash)
    }

    /// Each malformed document: the whole document is refused, with the JSON path and a reason that says what is wrong.
    static let malformed: [(String, [UInt8], String, String)] = [
        ("empty", [], "$", "empty document"),
        ("only spaces", Array("  \n ".utf8), "$", "empty document"),
        ("not JSON", Array("scan: {active: true}".utf8), "$", "unexpected character"),
        ("truncated", Array(#"{"scan": {"active": true"#.utf8), "$", "unterminated object"),
        ("trailing comma", Array(#"{"scan": {"active": true,}}"#.utf8), "$", "expected a key"),
        ("trailing garbage", Array(#"{} {}"#.utf8), "$", "after the document"),
        ("single quotes", Array("{'scan': 1}".utf8), "$", "expected a key"),
        ("NaN", Array(#"{"publishing": {"raw_max_per_s": NaN}}"#.utf8), "$", "unexpected character"),
        ("huge exponent", Array(#"{"publishing": {"raw_max_per_s": 1e999}}"#.utf8), "$", "number out of range"),
        ("leading zero", Array(#"{"version": 007}"#.utf8), "$", "expected ',' or '}'"),
        ("bad escape", Array(#"{"log": {"level": "\q"}}"#.utf8), "$", "invalid escape"),
        ("lone surrogate", Array(#"{"log": {"level": "\ud800"}}"#.utf8), "$", "lone surrogate"),
        ("control character", Array("{\"log\": {\"level\": \"a\u{01}\"}}".utf8), "$", "control character"),
        ("not UTF-8", [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D], "$", "not UTF-8"),
        ("1 MB", Array(("{\"x\": \"" + String(repeating: "a", count: 1_048_576) + "\"}").utf8), "$", "at most 65536"),
        (
            "10,000 deep", Array((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8),
            "$", "nested deeper than 16"
        ),
        ("duplicate key", Array(#"{"scan": {"active": true, "active": false}}"#.utf8), "$", "duplicate key \"active\""),
        ("a list at the top", Array("[1, 2]".utf8), "$", "expected an object, found a list"),
        ("a string at the top", Array(#""scan""#.utf8), "$", "expected an object, found a string"),
        ("null at the top", Array("null".utf8), "$", "expected an object, found null"),
        ("scan not an object", Array(#"{"scan": true}"#.utf8), "$.scan", "expected an object, found a boolean"),
        ("active as a string", Array(#"{"scan": {"active": "yes"}}"#.utf8), "$.scan.active", "expected true or false"),
        ("interval too small", Array(#"{"scan": {"interval_ms": 1}}"#.utf8), "$.scan.interval_ms", "out of range"),
        ("interval negative", Array(#"{"scan": {"interval_ms": -100}}"#.utf8), "$.scan.interval_ms", "out of range"),
        (
            "window over interval", Array(#"{"scan": {"interval_ms": 50, "window_ms": 60}}"#.utf8), "$.scan.window_ms",
            "must not exceed"
        ),
        ("filters not a list", Array(#"{"scan": {"filters": "uuid:FEAA"}}"#.utf8), "$.scan.filters", "expected a list"),
        (
            "filter not a string", Array(#"{"scan": {"filters": ["uuid:FEAA", 5]}}"#.utf8), "$.scan.filters[1]",
            "expected a string"
        ),
        ("filter unknown kind", Array(#"{"scan": {"filters": ["colour:red"]}}"#.utf8), "$.scan.filters[0]", "colour"),
        ("filter bad uuid", Array(#"{"scan": {"filters": ["uuid:XYZ"]}}"#.utf8), "$.scan.filters[0]", "uuid:XYZ"),
        (
            "ranging interval zero", Array(#"{"publishing": {"ranging_interval_s": 0}}"#.utf8),
            "$.publishing.ranging_interval_s", "out of range"
        ),
        (
            "health interval as string", Array(#"{"publishing": {"health_interval_s": "30"}}"#.utf8),
            "$.publishing.health_interval_s", "expected a number, found a string"
        ),
        (
            "raw rate huge", Array(#"{"publishing": {"raw_max_per_s": 1e9}}"#.utf8), "$.publishing.raw_max_per_s",
            "out of range"
        ),
        (
            "sample expiry", Array(#"{"publishing": {"sample_expiry_s": 10}}"#.utf8), "$.publishing.sample_expiry_s",
            "local only"
        ),
        ("log level unknown", Array(#"{"log": {"level": "loud"}}"#.utf8), "$.log.level", "expected one of"),
        ("log level a number", Array(#"{"log": {"level": 3}}"#.utf8), "$.log.level", "expected a string"),
        ("version fractional", Array(#"{"version": 1.5}"#.utf8), "$.version", "expected a whole number"),
        ("version negative", Array(#"{"version": -1}"#.utf8), "$.version", "out of range"),
        ("version as string", Array(#"{"version": "3"}"#.utf8), "$.version", "expected a whole number"),
        ("broker", Array(#"{"mqtt": {"broker": "mqtt://evil:1883"}}"#.utf8), "$.mqtt", "local only"),
        ("gateway id", Array(#"{"gateway": {"id": "other"}}"#.utf8), "$.gateway", "local only"),
        ("spool path", Array(#"{"spool": {"path": "/tmp/x"}}"#.utf8), "$.spool", "local only"),
        ("adapter", Array(#"{"adapter": {"device": "hci1"}}"#.utf8), "$.adapter", "local only"),
        (
            "a region that names no beacon", Array(#"{"regions": [{"id": "lobby", "enter_rssi": -70}]}"#.utf8),
            "$.regions[0]", "needs one identity"
        ),
        (
            "a region id twice",
            Array(#"{"regions": [{"id": "a", "name_prefix": "A"}, {"id": "a", "name_prefix": "B"}]}"#.utf8),
            "$.regions[1].id", "duplicate region id"
        ),
        (
            "a peripheral with no match", Array(#"{"peripherals": [{"name": "thermo"}]}"#.utf8), "$.peripherals[0]",
            "needs one of address"
        ),
        (
            "ranging out of range", Array(#"{"ranging": {"path_loss_exponent": 9}}"#.utf8),
            "$.ranging.path_loss_exponent",
            "out of range"
        ),
        (
            "valid keys beside one bad", Array(#"{"log": {"level": "debug"}, "scan": {"window_ms": "x"}}"#.utf8),
            "$.scan.window_ms", "expected a number"
        ),
    ]

    @Test(arguments: malformed.indices)
    func aMalformedDocumentIsRejectedWithItsPathAndReason(_ n: Int) {
        let (name, payload, path, reason) = Self.malformed[n]
        let v = RemoteConfigDocument.read(payload)
        #expect(v.overlay == nil, "\(name)")
        #expect(v.errors.contains { $0.path == path && $0.reason.contains(reason) }, "\(name): \(v.errors)")
    }

    @Test func aDocumentFedIntoTheParserOneByteLongerAtATimeNeverCrashes() {
        let doc = Array(
            #"{"version": 3, "scan": {"active": true, "filters": ["uuid:FEAA", "name:A\u00e9"]}, "log": {"level": "info"}}"#
                .utf8)
        for end in 0..<doc.count {
            let v = RemoteConfigDocument.read(Array(doc[..<end]))
            #expect(v.overlay == nil && !v.errors.isEmpty)
        }
        #expect(RemoteConfigDocument.read(doc).overlay != nil)
    }
}
