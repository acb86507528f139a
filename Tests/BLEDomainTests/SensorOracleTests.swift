import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEDomain

/// The venv the Makefile builds for the reference parsers.
let sensorOraclePython = "/var/cache/blegateway-sensors-venv/bin/python"

/// Our sensor decoders against the parsers Home Assistant uses (and TheengsDecoder where HA has
/// none): Tests/tools/sensor_oracle.py builds the frames — the formats' documented examples, then
/// a few thousand random valid and corrupted frames per format — and decodes them with the reference;
/// this decodes the same bytes and compares every value. Each disagreement is either in `explained`
/// (with the reason, also in docs/SENSORS.md) or fails the test.
///
/// Needs the venv `make sensors-venv` builds (in `make test`); without it the suite is skipped.
@Suite(.enabled(if: TestDependency.runs(FileManager.default.isExecutableFile(atPath: sensorOraclePython))))
struct SensorOracleTests {
    static let python = sensorOraclePython
    static let framesPerFormat = 2000
    /// The least number of reference values compared per family at 2 000 valid and 1 000 corrupted frames each
    /// (about half of what a run compares, so a family that lost most of its values fails).
    static let minimumCompared: [String: Int] = [
        "bthome": 7000, "mibeacon": 3000, "ruuvi": 9000, "ruuvi-3": 7000, "ruuvi-6": 10000, "ruuvi-e1": 14000,
        "govee": 3500, "qingping": 3900, "inkbird": 3400, "atc1441": 4500, "pvvx": 4500, "switchbot": 3400,
        "victron": 8600,
        // BTHome's button and dimmer events (a run compares about 1 900), Xiaomi's buttons (about 1 300).
        "events": 800, "mibeacon-events": 600,
    ]

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tools/sensor_oracle.py").path
    }

    /// A disagreement class: which format, which quantity, what kind.
    struct Disagreement: Hashable, CustomStringConvertible {
        enum Kind: String {
            /// The reference has a value, we have none.
            case missing
            /// We have a value, the reference (which decodes this quantity for this format) has none.
            case extra
            /// Both have one and they differ by more than the reference's rounding.
            case value
            /// The reference published a value outside the quantity's physical range; we flagged it.
            case flagged
        }
        var format: String
        /// "doc", "valid" or "corrupt": which kind of frame.
        var frames: String
        var quantity: String
        var kind: Kind
        var description: String { "\(format) \(frames) \(quantity) \(kind.rawValue)" }
    }

    /// The oracle script's output (one JSON object per line) for `arguments`; a failing script fails the test.
    static func runOracle(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sensor_oracle.py \(arguments.prefix(2))")
        return output
    }

    /// Our decoding of one oracle line's frame (its AD structure rebuilt, its advertiser's address, no key): each
    /// quantity's first value in range, and each quantity's plausible range.
    static func decodeFrame(
        of object: [String: Any]
    ) throws -> (values: [String: Double], ranges: [String: ClosedRange<Double>]) {
        let address = try #require(BDAddress(object["address"] as! String))
        let data = Vectors.hex(object["data"] as! String)
        let id = UInt16(object["id"] as! Int)
        let type: UInt8 = object["where"] as! String == "service" ? 0x16 : 0xFF
        let ad = [UInt8(data.count + 3), type, UInt8(id & 0xFF), UInt8(id >> 8)] + data
        let reading = SensorDecoder.decode(Advertisement(decoding: ad[...]), address: address, keys: .none)
        var values: [String: Double] = [:]
        var ranges: [String: ClosedRange<Double>] = [:]
        for v in reading ?? SensorReading(format: .bthome, model: "") {
            ranges[v.quantity.name] = v.quantity.plausibleRange
            if !v.isOutOfRange && values[v.quantity.name] == nil { values[v.quantity.name] = v.value }
        }
        return (values, ranges)
    }

    /// Disagreements understood, and why (the same list, with examples, is in docs/SENSORS.md,
    /// "Checked against Home Assistant"). Anything else fails the test.
    static func explanation(_ d: Disagreement) -> String? {
        switch (d.format, d.frames, d.quantity, d.kind) {
        case (_, _, _, .flagged):
            "the reference publishes a physically impossible value; ours flags it (out_of_range), not a reading"
        case ("atc1441", "corrupt", _, .missing), ("pvvx", "corrupt", _, .missing):
            "TheengsDecoder decodes 0x181A frames whose MAC is not the advertiser's, and frames cut short "
                + "(reading past their end); ours ignores both (theengs wrong)"
        case ("mibeacon", _, "voltage_v", .missing):
            "xiaomi-ble publishes a voltage estimated from the battery percentage; the frame carries none"
        case ("mibeacon", _, "humidity_pct", .value):
            "xiaomi-ble truncates LYWSD03MMC and MHO-C401 humidity to whole percent; the frame has 0.1 % (HA's choice)"
        case ("mibeacon", "corrupt", _, .extra):
            "a corrupted product id: xiaomi-ble decodes only products in its table, ours the standard objects of any"
        case ("switchbot", "corrupt", _, .missing):
            "a corrupted device-type octet naming another SwitchBot product (e.g. 0x7B): TheengsDecoder decodes its "
                + "battery, ours decodes meters only"
        case ("victron", "corrupt", _, .missing):
            "a record cut short: victron-ble pads it to a block and decodes the padding; ours flags it truncated "
                + "(victron-ble wrong)"
        case ("victron", "corrupt", _, .extra):
            "a corrupted state, error or alarm code outside victron-ble's enums: it raises and decodes nothing; ours "
                + "publishes the codes as numbers"
        case ("ruuvi", "library", "acceleration_x_ms2", .extra), ("ruuvi", "library", "acceleration_y_ms2", .extra),
            ("ruuvi", "library", "acceleration_z_ms2", .extra):
            "ruuvitag-ble drops all three axes when one reads 0x8000 (not available); the format marks each field on "
                + "its own, so ours keeps the axes that were measured (its test V5_OUTDOOR_SENSOR_DATA_INVALID_ACCEL)"
        case ("ruuvi", _, "movement_counter", .missing):
            "Ruuvi format 5 says 255 is 'not available'; ruuvitag-ble publishes it as a count (ruuvitag-ble wrong)"
        default:
            nil
        }
    }

    @Test func everyValueAgreesWithTheReferenceParsersOrIsExplained() throws {
        let output = try Self.runOracle(["--seed", "1", "--count", String(Self.framesPerFormat)])

        let address = BDAddress("A4:C1:38:0A:0B:0C")!
        var frames = 0
        var compared = 0
        var counts: [Disagreement: Int] = [:]
        var examples: [Disagreement: String] = [:]
        var referenceKeys: [String: Set<String>] = [:]
        var untranslated: Set<String> = []
        var comparedByFormat: [String: Int] = [:]
        var lines: [[String: Any]] = []
        for line in output.split(separator: UInt8(ascii: "\n")) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            lines.append(object)
            let format = object["format"] as! String
            let expected = object["expected"] as! [String: Double]
            referenceKeys[format, default: []].formUnion(expected.keys)
        }
        for object in lines {
            frames += 1
            let format = object["format"] as! String
            let expected = object["expected"] as! [String: Double]
            let data = Vectors.hex(object["data"] as! String)
            let id = UInt16(object["id"] as! Int)
            let name = Array((object["name"] as! String).utf8)
            var ad: [UInt8]
            if object["where"] as! String == "service" {
                ad = [UInt8(data.count + 3), 0x16, UInt8(id & 0xFF), UInt8(id >> 8)] + data
            } else {
                ad = [UInt8(data.count + 3), 0xFF, UInt8(id & 0xFF), UInt8(id >> 8)] + data
            }
            if !name.isEmpty { ad += [UInt8(name.count + 1), 0x09] + name }
            var keys = SensorKeys.none
            if let key = object["key"] as? String { keys = SensorKeys(octets: [address: Vectors.hex(key)]) }
            let reading = SensorDecoder.decode(Advertisement(decoding: ad[...]), address: address, keys: keys)

            var ours: [String: Double] = [:]
            var ranges: [String: ClosedRange<Double>] = [:]
            for v in reading ?? SensorReading(format: .bthome, model: "") {
                ranges[v.quantity.name] = v.quantity.plausibleRange
                if !v.isOutOfRange && ours[v.quantity.name] == nil { ours[v.quantity.name] = v.value }
            }
            // Event code 0 is "none": published as it came, but no event, and the reference has none to compare.
            if ours["button_event"] == 0 { ours["button_event"] = nil }
            if ours["dimmer_event"] == 0 {
                ours["dimmer_event"] = nil
                ours["dimmer_steps"] = nil
            }
            for key in object["untranslated"] as? [String] ?? [] { untranslated.insert("\(format): \(key)") }
            let frames = object["case"] as! String
            func record(_ d: Disagreement) {
                counts[d, default: 0] += 1
                if examples[d] == nil {
                    examples[d] = "\(object["data"] as! String) ours \(ours) reference \(expected)"
                }
            }
            for (quantity, theirs) in expected {
                compared += 1
                comparedByFormat[format, default: 0] += 1
                if quantity.hasSuffix("_event") {
                    comparedByFormat[format.hasPrefix("mibeacon") ? "mibeacon-events" : "events", default: 0] += 1
                }
                guard let mine = ours[quantity] else {
                    let impossible = ranges[quantity].map { !$0.contains(theirs) } ?? false
                    record(
                        Disagreement(
                            format: format, frames: frames, quantity: quantity,
                            kind: impossible ? .flagged : .missing))
                    continue
                }
                if abs(mine - theirs) > 0.0051 + 1e-9 * abs(theirs) {
                    record(Disagreement(format: format, frames: frames, quantity: quantity, kind: .value))
                }
            }
            for quantity in ours.keys
            where expected[quantity] == nil
                && referenceKeys[format, default: []].contains(quantity)
            {
                record(Disagreement(format: format, frames: frames, quantity: quantity, kind: .extra))
            }
        }
        let unexplained = counts.filter { Self.explanation($0.key) == nil }
        for (d, n) in unexplained.sorted(by: { $0.key.description < $1.key.description }) {
            print("sensor oracle: \(d): \(n) frames, UNEXPLAINED, e.g. \(examples[d] ?? "")")
        }
        print(
            "sensor oracle: \(frames) frames, \(compared) reference values compared, "
                + "\(counts.values.reduce(0, +) - unexplained.values.reduce(0, +)) explained disagreements, "
                + "\(unexplained.values.reduce(0, +)) unexplained")
        #expect(frames > 10 * Self.framesPerFormat)
        #expect(unexplained.isEmpty, "\(unexplained.keys.map(\.description).sorted())")
        // A key the translation does not know would leave that quantity uncompared: it fails instead.
        #expect(untranslated.isEmpty, "reference keys with no gateway name: \(untranslated.sorted())")
        // Every family is compared on enough values to mean something (a generator that stopped producing a family's
        // values, or a translation that lost them, would otherwise pass); and the events are compared.
        print("sensor oracle: values compared per family: \(comparedByFormat.sorted { $0.key < $1.key })")
        for format in Self.minimumCompared.keys.sorted() {
            #expect(
                comparedByFormat[format, default: 0] >= Self.minimumCompared[format]!,
                "\(format): \(comparedByFormat[format, default: 0]) values compared")
        }
        #expect(
            counts.keys.allSatisfy { !($0.quantity.hasSuffix("_event") && $0.kind != .flagged) },
            "events disagree: \(counts.keys.filter { $0.quantity.hasSuffix("_event") })")
    }

    /// The reference parsers' pinned source distributions (`make sensors-venv` downloads them beside the venv).
    static let sdists = "/var/cache/blegateway-sensors-venv/sdists"
    /// Those whose sdist carries no tests (their tests live only in their repositories, which this machine cannot
    /// reach): a pin that brings tests fails below, so that its frames are compared too.
    static let sdistsWithoutTests: Set<String> = [
        "bthome_ble", "govee_ble", "inkbird_ble", "qingping_ble", "xiaomi_ble",
    ]

    /// The frames the parser libraries' own test suites spell out (bytes.fromhex literals, read from the pinned
    /// sdists at test time, never copied here): the reference decodes each, and ours must agree, value for value,
    /// or be explained as the generated frames' disagreements are. Invalid and truncated frames among them must give
    /// no value on either side.
    @Test(
        .enabled(
            if: TestDependency.runs(FileManager.default.fileExists(atPath: sdists + "/requirements.txt")),
            "needs the reference parsers' sdists in \(sdists) (make sensors-venv)"))
    func theParserLibrariesOwnTestFramesAgreeWithThem() throws {
        let output = try Self.runOracle(["--library-vectors", Self.sdists])
        var frames: [String: Int] = [:]
        var withoutTests: Set<String> = []
        var packages: Set<String> = []
        var disagreements: [Disagreement: String] = [:]
        var untranslated: Set<String> = []
        var referenceKeys: [String: Set<String>] = [:]
        var extras: [(String, Set<String>, (String, Disagreement.Kind) -> Void)] = []
        for line in output.split(separator: UInt8(ascii: "\n")) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            if let package = object["package"] as? String {
                packages.insert(package)
                if object["test_modules"] as? Int == 0 { withoutTests.insert(package) }
                continue
            }
            let format = object["format"] as! String
            let expected = object["expected"] as! [String: Double]
            referenceKeys[format, default: []].formUnion(expected.keys)
            let (ours, ranges) = try Self.decodeFrame(of: object)
            for key in object["untranslated"] as? [String] ?? [] { untranslated.insert("\(format): \(key)") }
            frames[format, default: 0] += 1
            let example = "\(object["capture"] ?? "") \(object["data"] ?? "") ours \(ours) reference \(expected)"
            func record(_ quantity: String, _ kind: Disagreement.Kind) {
                let d = Disagreement(format: format, frames: "library", quantity: quantity, kind: kind)
                disagreements[d] = disagreements[d] ?? example
            }
            for (quantity, theirs) in expected {
                guard let mine = ours[quantity] else {
                    let impossible = ranges[quantity].map { !$0.contains(theirs) } ?? false
                    record(quantity, impossible ? .flagged : .missing)
                    continue
                }
                if abs(mine - theirs) > 0.0051 + 1e-9 * abs(theirs) { record(quantity, .value) }
            }
            extras.append((format, Set(ours.keys).subtracting(expected.keys), record))
        }
        // An extra value counts only for a quantity the reference decodes for that family (a TX power it never
        // publishes is no disagreement).
        for (format, quantities, record) in extras {
            for q in quantities where referenceKeys[format, default: []].contains(q) { record(q, .extra) }
        }
        let unexplained = disagreements.filter { Self.explanation($0.key) == nil }
        print(
            "sensor oracle, the libraries' own frames: \(frames), disagreements: "
                + "\(disagreements.keys.map(\.description).sorted()), unexplained: \(unexplained.count)")
        #expect(packages == Set(["ruuvitag_ble"]).union(Self.sdistsWithoutTests), "the sdists read: \(packages)")
        #expect(withoutTests == Self.sdistsWithoutTests, "sdists without tests: \(withoutTests.sorted())")
        #expect((frames["ruuvi"] ?? 0) >= 18, "ruuvitag-ble's test frames: \(frames)")
        #expect(unexplained.isEmpty, "\(unexplained.values.sorted().prefix(5))")
        #expect(untranslated.isEmpty, "reference keys with no gateway name: \(untranslated.sorted())")
    }

    /// The captures other people recorded (../shared/captures, beside the project).
    static var captures: [String] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/captures")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return files.filter { $0.hasSuffix(".btsnoop") }.sorted().map { dir.appendingPathComponent($0).path }
    }

    /// Real frames: every sensor family's advertisement in the captures, found by tshark's dissection (not ours) and
    /// decoded by the reference with the advertiser's own address, against ours. Today they hold 264 Xiaomi MiBeacon
    /// frames (service data FE95), every one without an object: the reference finds no value in any, and neither
    /// must we. A value either side finds alone, or a different one, fails; so does a family with fewer frames.
    @Test(
        .enabled(
            if: TestDependency.runs(
                !captures.isEmpty && FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark")),
            "needs ../shared/captures and tshark (make test installs it)"))
    func realFramesFromTheCapturesAgreeWithTheReferenceParsers() throws {
        let output = try Self.runOracle(["--captures"] + Self.captures)
        var frames: [String: Int] = [:]
        var withValues: [String: Int] = [:]
        var disagreements: [String] = []
        for line in output.split(separator: UInt8(ascii: "\n")) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            let format = object["format"] as! String
            // The packet id is bookkeeping, not a value: compared by neither side here.
            let expected = (object["expected"] as! [String: Double]).filter { $0.key != "packet_id" }
            var (ours, _) = try Self.decodeFrame(of: object)
            frames[format, default: 0] += 1
            if !expected.isEmpty { withValues[format, default: 0] += 1 }
            ours["packet_id"] = nil
            let same =
                Set(ours.keys) == Set(expected.keys)
                && expected.allSatisfy { k, v in abs((ours[k] ?? .nan) - v) <= 0.0051 + 1e-9 * abs(v) }
            if !same {
                disagreements.append(
                    "\(object["capture"] ?? "") \(format) \(object["data"] ?? "") ours \(ours) reference \(expected)")
            }
        }
        print(
            "sensor oracle, captures: \(frames) frames (with values: \(withValues)), \(disagreements.count) disagreements"
        )
        #expect((frames["mibeacon"] ?? 0) >= 264, "the captures' MiBeacon frames: \(frames)")
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }
}
