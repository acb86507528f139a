import BLEHCI
import BLESimulator
import Testing

@testable import BLEDomain

/// Values laid out as the GATT Specification Supplement defines each characteristic's fields.
@Suite struct GATTValueDecodingTests {
    func decode(_ uuid16: UInt16, _ bytes: [UInt8]) -> GATTValue? {
        GATTValueDecoding.decode(BluetoothUUID(uuid16: uuid16), bytes)
    }

    @Test func batteryLevelIsAPercentFrom0To100() {
        #expect(decode(0x2A19, [0x55])?.json == #"{"battery_pct":85}"#)
        #expect(decode(0x2A19, [0x00])?.json == #"{"battery_pct":0}"#)
        #expect(decode(0x2A19, [0x65]) == nil)  // 101 is out of range
        #expect(decode(0x2A19, []) == nil)
        #expect(decode(0x2A19, [0x10, 0x00]) == nil)
    }

    @Test func temperatureIsSint16InHundredthsOfADegree() {
        #expect(decode(0x2A6E, [0x66, 0x08])?.json == #"{"temperature_c":21.5}"#)  // 2150
        #expect(decode(0x2A6E, [0x0C, 0xFE])?.json == #"{"temperature_c":-5}"#)  // -500
        #expect(decode(0x2A6E, [0x01, 0x00])?.json == #"{"temperature_c":0.01}"#)
        #expect(decode(0x2A6E, [0x00, 0x80]) == nil)  // 0x8000: value is not known
        #expect(decode(0x2A6E, [0x66]) == nil)
    }

    @Test func humidityIsUint16InHundredthsOfAPercent() {
        #expect(decode(0x2A6F, [0x94, 0x11])?.json == #"{"humidity_pct":45}"#)  // 4500
        #expect(decode(0x2A6F, [0x9F, 0x11])?.json == #"{"humidity_pct":45.11}"#)
        #expect(decode(0x2A6F, [0xFF, 0xFF]) == nil)  // value is not known
        #expect(decode(0x2A6F, [0x11, 0x27]) == nil)  // 10001: beyond 100 %
        #expect(decode(0x2A6F, [0x10, 0x27])?.json == #"{"humidity_pct":100}"#)
    }

    @Test func temperatureMeasurementReadsFlagsFloatTimestampAndType() {
        // Flags 0x06 (Celsius, time stamp, type) | FLOAT 0xFF00016C = 364 × 10^-1 | 2026-11-21 09:30:05 | body (2).
        let v: [UInt8] = [0x06, 0x6C, 0x01, 0x00, 0xFF, 0xEA, 0x07, 0x0B, 0x15, 0x09, 0x1E, 0x05, 0x02]
        #expect(
            decode(0x2A1C, v)?.json
                == #"{"temperature_c":36.4,"timestamp":"2026-11-21T09:30:05","temperature_type":2}"#)
        // Fahrenheit, nothing optional: 97.7 °F.
        #expect(decode(0x2A1C, [0x01, 0xD1, 0x03, 0x00, 0xFF])?.json == #"{"temperature_f":97.7}"#)
        // A negative mantissa and a positive exponent.
        #expect(decode(0x2A1C, [0x00, 0xFE, 0xFF, 0xFF, 0x01])?.json == #"{"temperature_c":-20}"#)
        #expect(decode(0x2A1C, [0x00, 0xFF, 0xFF, 0x7F, 0x00]) == nil)  // NaN
        #expect(decode(0x2A1C, [0x00, 0x00, 0x00, 0x80, 0x00]) == nil)  // NRes
        #expect(decode(0x2A1C, [0x02, 0x6C, 0x01, 0x00, 0xFF, 0xEA, 0x07]) == nil)  // time stamp cut short
        #expect(decode(0x2A1C, [0x00, 0x6C, 0x01, 0x00, 0xFF, 0x02]) == nil)  // a byte no flag announced
    }

    @Test func heartRateMeasurementReadsFormatContactEnergyAndRRIntervals() {
        // Flags 0x16: uint8 rate, contact supported and detected, RR present | 72 bpm | RR 800/1024 s, 1024/1024 s.
        #expect(
            decode(0x2A37, [0x16, 0x48, 0x20, 0x03, 0x00, 0x04])?.json
                == #"{"heart_rate_bpm":72,"sensor_contact":true,"rr_intervals_s":[0.78125,1]}"#)
        // Flags 0x09: uint16 rate, energy | 300 bpm | 1234 kJ; contact not supported so not reported.
        #expect(decode(0x2A37, [0x09, 0x2C, 0x01, 0xD2, 0x04])?.json == #"{"heart_rate_bpm":300,"energy_kj":1234}"#)
        #expect(decode(0x2A37, [0x04, 0x3C])?.json == #"{"heart_rate_bpm":60,"sensor_contact":false}"#)
        #expect(decode(0x2A37, [0x01, 0x48]) == nil)  // uint16 announced, one byte sent
        #expect(decode(0x2A37, [0x10, 0x48, 0x20]) == nil)  // half an RR interval
        #expect(decode(0x2A37, [0x10, 0x48]) == nil)  // RR announced, none sent
        #expect(decode(0x2A37, []) == nil)
    }

    @Test func stringsAreUTF8AndInvalidUTF8IsNil() {
        #expect(decode(0x2A00, Array("Sensor-01".utf8))?.json == #"{"device_name":"Sensor-01"}"#)
        #expect(
            decode(0x2A29, Array("Nordic \"Semi\"".utf8) + [0x00])?.json
                == #"{"manufacturer_name":"Nordic \"Semi\""}"#)
        #expect(decode(0x2A24, Array("Température".utf8))?.json == #"{"model_number":"Température"}"#)
        #expect(decode(0x2A25, [0x41, 0xC3]) == nil)  // a truncated two-byte sequence
        #expect(decode(0x2A26, [0xFF]) == nil)
        for uuid in UInt16(0x2A24)...0x2A29 { #expect(decode(uuid, [0x31]) != nil) }
    }

    @Test func unknownCharacteristicsAreNil() {
        #expect(decode(0x2A5B, [0x01, 0x02]) == nil)
        #expect(GATTValueDecoding.decode(BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!, [0x01]) == nil)
    }

    /// Fed one byte at a time: no prefix of a valid Heart Rate Measurement decodes as the whole, and none traps.
    @Test func prefixesOfAValidMeasurementNeverDecodeAsTheWhole() {
        let full: [UInt8] = [0x1E, 0x48, 0xD2, 0x04, 0x20, 0x03, 0x00, 0x04]
        let whole = decode(0x2A37, full)
        #expect(whole != nil)
        for n in 0..<full.count { #expect(decode(0x2A37, Array(full.prefix(n))) != whole) }
        let tm: [UInt8] = [0x06, 0x6C, 0x01, 0x00, 0xFF, 0xEA, 0x07, 0x0B, 0x15, 0x09, 0x1E, 0x05, 0x02]
        for n in 0..<tm.count { #expect(decode(0x2A1C, Array(tm.prefix(n))) == nil) }
    }

    /// The simulated sensor's characteristics decode as the gateway will publish them.
    @Test func simulatedSensorValuesDecode() throws {
        let server = SimGATTServer(deviceName: "Sensor-01", phase: 0)
        // Temperature: 21.5 + 1.5·sin(0) = 21.5 °C exactly, in 0.01 °C.
        #expect(
            decode(0x2A6E, server.value(of: SimGATTServer.temperatureHandle, at: 0))?.json
                == #"{"temperature_c":21.5}"#)
        let humidity = try #require(decode(0x2A6F, server.value(of: SimGATTServer.humidityHandle, at: 0)))
        guard case .humidity(let h) = humidity else {
            Issue.record("not humidity: \(humidity)")
            return
        }
        #expect(h == GATTDecimal(4500, exponent: -2))
        #expect(decode(0x2A00, server.value(of: 0x0003, at: 0)) == .text(key: "device_name", value: "Sensor-01"))
    }
}
