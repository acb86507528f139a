import BLEHCI
import BLETransport

/// A decimal number kept exactly as the characteristic carried it: `mantissa × 10^exponent`, so
/// 0.01 °C steps and IEEE-11073 FLOATs print without binary rounding ("21.5", not "21.499999").
public struct GATTDecimal: Hashable, Sendable, CustomStringConvertible {
    public var mantissa: Int64
    public var exponent: Int

    public init(_ mantissa: Int64, exponent: Int) {
        self.mantissa = mantissa
        self.exponent = exponent
    }

    public var doubleValue: Double {
        var v = Double(mantissa)
        if exponent >= 0 { for _ in 0..<exponent { v *= 10 } } else { for _ in 0..<(-exponent) { v /= 10 } }
        return v
    }

    public func append(to out: inout [UInt8]) {
        if exponent <= 0 {
            JSONWriter.appendFixed(mantissa, scale: -exponent, to: &out)
        } else {
            var v = mantissa
            for _ in 0..<min(exponent, 18) { v = v.multipliedReportingOverflow(by: 10).partialValue }
            JSONWriter.appendDecimal(v, to: &out)
        }
    }

    public var description: String {
        var out: [UInt8] = []
        append(to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// The value of a well-known SIG characteristic, decoded (GATT Specification Supplement, v8 and later).
public enum GATTValue: Hashable, Sendable {
    /// Battery Level 0x2A19: percent, 0–100 (§3.27).
    case batteryLevel(percent: Int)
    /// Temperature 0x2A6E: sint16 in 0.01 °C (§3.204).
    case temperature(celsius: GATTDecimal)
    /// Humidity 0x2A6F: uint16 in 0.01 % (§3.124).
    case humidity(percent: GATTDecimal)
    /// Temperature Measurement 0x2A1C (§3.205).
    case temperatureMeasurement(TemperatureMeasurement)
    /// Heart Rate Measurement 0x2A37 (§3.113).
    case heartRate(HeartRateMeasurement)
    /// A UTF-8 string characteristic: Device Name 0x2A00 and the Device Information strings 0x2A24–0x2A29.
    case text(key: String, value: String)

    public struct TemperatureMeasurement: Hashable, Sendable {
        public var value: GATTDecimal
        public var fahrenheit: Bool
        /// Date Time (§3.70): year, month, day, hours, minutes, seconds, as sent.
        public var timestamp: [Int]?
        /// Temperature Type (§3.206), e.g. 2 = body (general).
        public var type: UInt8?
    }

    public struct HeartRateMeasurement: Hashable, Sendable {
        public var beatsPerMinute: Int
        /// nil when the sensor does not support contact detection (flags bit 2 clear).
        public var sensorContact: Bool?
        /// Energy Expended in kilojoules.
        public var energyExpended: Int?
        /// RR-Intervals in 1/1024 s, oldest first.
        public var rrIntervals: [UInt16]
    }

    /// The value as one JSON object, e.g. `{"temperature_c":21.5}`.
    public var json: String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        appendMembers(to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The members alone (`"temperature_c":21.5`), to merge into a larger object.
    public func appendMembers(to out: inout [UInt8]) {
        func key(_ k: String) {
            JSONWriter.appendString(k, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func comma() { out.append(UInt8(ascii: ",")) }
        switch self {
        case .batteryLevel(let p):
            key("battery_pct")
            JSONWriter.appendDecimal(Int64(p), to: &out)
        case .temperature(let c):
            key("temperature_c")
            c.append(to: &out)
        case .humidity(let p):
            key("humidity_pct")
            p.append(to: &out)
        case .temperatureMeasurement(let m):
            key(m.fahrenheit ? "temperature_f" : "temperature_c")
            m.value.append(to: &out)
            if let t = m.timestamp {
                comma()
                key("timestamp")
                let text =
                    padded(t[0], 4) + "-" + padded(t[1], 2) + "-" + padded(t[2], 2) + "T"
                    + padded(t[3], 2) + ":" + padded(t[4], 2) + ":" + padded(t[5], 2)
                JSONWriter.appendString(text, to: &out)
            }
            if let type = m.type {
                comma()
                key("temperature_type")
                JSONWriter.appendDecimal(Int64(type), to: &out)
            }
        case .heartRate(let h):
            key("heart_rate_bpm")
            JSONWriter.appendDecimal(Int64(h.beatsPerMinute), to: &out)
            if let contact = h.sensorContact {
                comma()
                key("sensor_contact")
                out.append(contentsOf: (contact ? "true" : "false").utf8)
            }
            if let e = h.energyExpended {
                comma()
                key("energy_kj")
                JSONWriter.appendDecimal(Int64(e), to: &out)
            }
            if !h.rrIntervals.isEmpty {
                // 1/1024 s = 0.0009765625 s exactly: ten decimal places say every interval without rounding.
                comma()
                key("rr_intervals_s")
                out.append(UInt8(ascii: "["))
                for (i, rr) in h.rrIntervals.enumerated() {
                    if i > 0 { comma() }
                    JSONWriter.appendFixed(Int64(rr) * 9_765_625, scale: 10, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
        case .text(let k, let v):
            key(k)
            JSONWriter.appendString(v, to: &out)
        }
    }
}

/// Decoders of well-known SIG characteristic values (GATT Specification Supplement). Each returns nil
/// for a characteristic it does not know, a value of the wrong length, a "value is not known" sentinel
/// or an out-of-range value: a reading is published decoded, or raw, never half-decoded.
public enum GATTValueDecoding {
    typealias Decoder = @Sendable ([UInt8]) -> GATTValue?

    /// One table from the 16-bit UUID to its decoder.
    static let decoders: [UInt16: Decoder] = [
        0x2A19: batteryLevel,
        0x2A6E: temperature,
        0x2A6F: humidity,
        0x2A1C: temperatureMeasurement,
        0x2A37: heartRateMeasurement,
        0x2A00: text("device_name"),
        0x2A24: text("model_number"),
        0x2A25: text("serial_number"),
        0x2A26: text("firmware_revision"),
        0x2A27: text("hardware_revision"),
        0x2A28: text("software_revision"),
        0x2A29: text("manufacturer_name"),
    ]

    /// The decoded value of characteristic `uuid`, or nil when it is not known or the bytes are malformed.
    public static func decode(_ uuid: BluetoothUUID, _ value: [UInt8]) -> GATTValue? {
        guard let short = uuid.uuid16, let decoder = decoders[short] else { return nil }
        return decoder(value)
    }

    /// Battery Level: uint8, "Allowed range is: 0 to 100".
    static func batteryLevel(_ v: [UInt8]) -> GATTValue? {
        guard v.count == 1, v[0] <= 100 else { return nil }
        return .batteryLevel(percent: Int(v[0]))
    }

    /// Temperature: sint16, M = 1, d = -2, b = 0 (0.01 °C); 0x8000 "value is not known".
    static func temperature(_ v: [UInt8]) -> GATTValue? {
        var c = ByteCursor(v)
        guard v.count == 2, let raw = c.readLE16(), raw != 0x8000 else { return nil }
        return .temperature(celsius: GATTDecimal(Int64(Int16(bitPattern: raw)), exponent: -2))
    }

    /// Humidity: uint16, 0.01 %, "Allowed range 0 to 100"; 0xFFFF "value is not known".
    static func humidity(_ v: [UInt8]) -> GATTValue? {
        var c = ByteCursor(v)
        guard v.count == 2, let raw = c.readLE16(), raw <= 10_000 else { return nil }
        return .humidity(percent: GATTDecimal(Int64(raw), exponent: -2))
    }

    /// Temperature Measurement: Flags (1) | Temperature Measurement Value (FLOAT, 4) | Time Stamp (7, if flags
    /// bit 1) | Temperature Type (1, if flags bit 2). Flags bit 0: 0 = Celsius, 1 = Fahrenheit.
    static func temperatureMeasurement(_ v: [UInt8]) -> GATTValue? {
        var c = ByteCursor(v)
        guard let flags = c.readU8(), let raw = c.readLE32(), let value = float(raw) else { return nil }
        var timestamp: [Int]?
        if flags & 0x02 != 0 {
            guard let y = c.readLE16(), let mo = c.readU8(), let d = c.readU8(), let h = c.readU8(),
                let mi = c.readU8(), let s = c.readU8()
            else { return nil }
            timestamp = [Int(y), Int(mo), Int(d), Int(h), Int(mi), Int(s)]
        }
        var type: UInt8?
        if flags & 0x04 != 0 {
            guard let t = c.readU8() else { return nil }
            type = t
        }
        guard c.isAtEnd else { return nil }
        return .temperatureMeasurement(
            .init(value: value, fahrenheit: flags & 0x01 != 0, timestamp: timestamp, type: type))
    }

    /// IEEE 11073-20601 FLOAT: an 8-bit signed exponent (high byte) over a 24-bit signed mantissa. The special
    /// mantissas NaN 0x7FFFFF, NRes 0x800000, +INFINITY 0x7FFFFE, -INFINITY 0x800002 and reserved 0x800001 carry
    /// no reading.
    static func float(_ raw: UInt32) -> GATTDecimal? {
        let m24 = raw & 0x00FF_FFFF
        guard ![0x7F_FFFF, 0x80_0000, 0x7F_FFFE, 0x80_0002, 0x80_0001].contains(m24) else { return nil }
        let mantissa = Int32(bitPattern: m24 << 8) >> 8  // sign-extend 24 bits
        let exponent = Int(Int8(bitPattern: UInt8(raw >> 24)))
        return GATTDecimal(Int64(mantissa), exponent: exponent)
    }

    /// Heart Rate Measurement: Flags (1) | Heart Rate (uint8, or uint16 if flags bit 0) | Energy Expended
    /// (uint16 kJ, if bit 3) | RR-Interval (uint16 1/1024 s, repeated, if bit 4). Bits 1–2: Sensor Contact
    /// status — bit 2 "supported", then bit 1 "detected".
    static func heartRateMeasurement(_ v: [UInt8]) -> GATTValue? {
        var c = ByteCursor(v)
        guard let flags = c.readU8() else { return nil }
        let bpm: Int
        if flags & 0x01 != 0 {
            guard let b = c.readLE16() else { return nil }
            bpm = Int(b)
        } else {
            guard let b = c.readU8() else { return nil }
            bpm = Int(b)
        }
        var energy: Int?
        if flags & 0x08 != 0 {
            guard let e = c.readLE16() else { return nil }
            energy = Int(e)
        }
        var rr: [UInt16] = []
        if flags & 0x10 != 0 {
            guard c.remaining >= 2, c.remaining % 2 == 0 else { return nil }
            while let r = c.readLE16() { rr.append(r) }
        }
        guard c.isAtEnd else { return nil }
        let contact: Bool? = flags & 0x04 != 0 ? flags & 0x02 != 0 : nil
        return .heartRate(.init(beatsPerMinute: bpm, sensorContact: contact, energyExpended: energy, rrIntervals: rr))
    }

    /// A utf8s characteristic. Invalid UTF-8 is nil; trailing NULs (which some devices send, as C strings)
    /// are dropped.
    static func text(_ key: String) -> Decoder {
        { v in
            var bytes = v[...]
            while bytes.last == 0 { bytes = bytes.dropLast() }
            guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
            return .text(key: key, value: s)
        }
    }
}

/// `v` in decimal, zero-padded to `width` digits.
private func padded(_ v: Int, _ width: Int) -> String {
    let digits = String(v)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}
