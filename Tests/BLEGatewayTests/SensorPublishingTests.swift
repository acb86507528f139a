import BLEDomain
import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// The sensor topic's payload and the `sensors:` configuration (docs/SENSORS.md, schema/v1/sensor.json).
@Suite struct SensorPublishingTests {
    let address = BDAddress("A4:C1:38:0A:0B:0C")!

    func object(_ body: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }

    @Test func aReadingCarriesModelQuantitiesWithUnitsCounterAndRSSI() throws {
        var r = SensorReading(format: .bthome, model: "BTHome")
        r.counter = 9
        r.append(.temperature, 25.06)
        r.append(.humidity, 50.55)
        r.append(.temperature, 27.3)
        r.append(.humidity, 499.24)  // out of physical range
        r.append(.door, 1)
        let o = try object(GatewayReadings.sensorBody(r, address: address, rssi: -61))
        #expect(o["address"] as? String == "A4:C1:38:0A:0B:0C")
        #expect(o["format"] as? String == "bthome")
        #expect(o["model"] as? String == "BTHome")
        #expect(o["rssi"] as? Int == -61)
        #expect(o["counter"] as? Int == 9)
        #expect(o["encrypted"] as? Bool == false)
        let values = try #require(o["values"] as? [String: Double])
        #expect(values == ["temperature_c": 25.06, "humidity_pct": 50.55, "temperature_c_2": 27.3, "door": 1])
        #expect(o["out_of_range"] as? [String: Double] == ["humidity_pct_2": 499.24])
    }

    @Test func anUndecryptableFrameSaysWhyAndCarriesNoValue() throws {
        var r = SensorReading(format: .miBeacon, model: "LYWSD03MMC")
        r.wasEncrypted = true
        r.issues.insert(.keyMissing)
        let o = try object(GatewayReadings.sensorBody(r, address: address, rssi: nil))
        #expect(o["undecryptable"] as? String == "key_missing")
        #expect((o["values"] as? [String: Any])?.isEmpty == true)
        #expect(o["rssi"] is NSNull)
    }

    @Test func payloadsMatchTheSchema() throws {
        var full = SensorReading(format: .ruuviV5, model: "RuuviTag")
        full.counter = 205
        full.append(.temperature, 24.3)
        full.append(.temperature, 163.835)
        full.issues.insert(.truncated)
        var locked = SensorReading(format: .bthome, model: "BTHome")
        locked.wasEncrypted = true
        locked.issues.insert(.authenticationFailed)
        let published = try [full, locked].map { r in
            var o = try object(GatewayReadings.sensorBody(r, address: address, rssi: -70))
            o["run"] = "0123456789abcdef"
            o["seq"] = 1
            o["ts"] = 1_795_243_048.062
            o["clock_synced"] = true
            return (topic: "blegateway/gw1/sensors/a4c1380a0b0c", json: o)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sensor-schema-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let problems = try SchemaValidation.problems(published, prefix: "blegateway", directory: directory)
        #expect(problems == nil, "\(problems ?? "")")
    }

    @Test func bindkeysAreReadFromTheFileOrAFileTheyName() throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("bindkey-\(getpid())")
        try "e9ea895fac7cca6d30532432a516f3a8\n".write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        var reader = YAMLConfigurationReader()
        let c = try reader.read(
            """
            sensors:
              min_interval_s: 5
              repeat_window_s: 20
              bindkeys:
                "A4:C1:38:0A:0B:0C": 231d39c1d7cc1ab1aee224cd096db932
                "A4:C1:38:0A:0B:0D": "file:\(keyFile.path)"
            """)
        #expect(c.sensors.minIntervalSeconds == 5)
        #expect(c.sensors.gateConfiguration.repeatWindow == .seconds(20))
        #expect(c.sensors.bindkeys[address]?.first == 0x23)
        #expect(c.sensors.bindkeys[BDAddress("A4:C1:38:0A:0B:0D")!]?.first == 0xE9)
    }

    @Test func aMalformedBindkeyIsRefusedWithoutEchoingIt() {
        var reader = YAMLConfigurationReader()
        #expect {
            try reader.read("sensors:\n  bindkeys:\n    \"A4:C1:38:0A:0B:0C\": 231d39c1d7cc1ab1\n")
        } throws: { e in
            let text = "\(e)"
            return text.contains("sensors.bindkeys") && text.contains("16 characters") && !text.contains("231d39c1")
        }
    }

    /// `Character.isHexDigit` takes the fullwidth forms ("０"–"９", "ａ"–"ｆ"), which no integer parser reads. Two of
    /// them (three UTF-8 bytes each) and 26 ASCII digits are 32 bytes: the reader once counted bytes, took the text
    /// for hex, and crashed on the first pair of bytes that was no number.
    @Test func aBindkeyWithFullwidthDigitsIsRefusedNotACrash() {
        var reader = YAMLConfigurationReader()
        let key = "\u{FF10}\u{FF41}" + String(repeating: "0", count: 26)
        #expect(key.utf8.count == 32 && key.allSatisfy { $0.isHexDigit })
        #expect {
            try reader.read("sensors:\n  bindkeys:\n    \"A4:C1:38:0A:0B:0C\": \(key)\n")
        } throws: { e in
            "\(e)".contains("32 hex digits, found 28 characters") && !"\(e)".contains(key)
        }
    }

    @Test func bindkeysAreLocalOnly() {
        #expect(RemoteConfigDocument.localOnly["sensors"] != nil)
    }
}
