/// Govee thermo-hygrometers (no public specification; layouts as Home Assistant's govee-ble reads
/// them, confirmed there against devices):
/// - H5072/H5075, company 0xEC88, 6 octets: `00 | packed 3 BE | battery (bit 7: error) | 00`, where the
///   packed value is `temperature × 10000 + humidity × 10` with bit 23 the temperature's sign;
/// - H5074, company 0xEC88, 7 octets: `00 | temperature int16 LE 0.01 | humidity uint16 LE 0.01 | battery | 02`;
/// - H5101/H5102/H5177…, company 0x0001, 6 octets: `01 01 | packed 3 BE | battery (bit 7: error)`.
public enum GoveeFrame {
    /// What the thermo-hygrometers can measure, °C (Home Assistant's govee-ble uses the same bounds).
    public static let deviceRange: ClosedRange<Double> = -40...100

    @inlinable static func decode(_ frame: ADReader, source: SensorSource) -> SensorReading? {
        var c = frame
        switch (source, frame.remaining) {
        case (.goveeEC88, 6):
            guard c.readU8() != nil, let r = packed(&c, model: "H5072/H5075") else { return nil }
            return r
        case (.goveeEC88, 7):
            guard c.readU8() != nil, let t = c.readLE16(), let h = c.readLE16(), let b = c.readU8() else { return nil }
            var r = SensorReading(format: .govee, model: "H5074")
            r.append(.temperature, Double(Int16(bitPattern: t)) / 100)
            r.append(.humidity, Double(h) / 100)
            r.append(.batteryPercent, Double(b))
            return r
        case (.govee0001, 6):
            guard c.readLE16() != nil, let r = packed(&c, model: "H5101/H5102/H5177") else { return nil }
            return r
        default:
            return nil
        }
    }

    /// `packed 3 | battery`: the temperature and humidity in one 24-bit decimal number.
    @inlinable static func packed(_ c: inout ADReader, model: StaticString) -> SensorReading? {
        guard let hi = c.readU8(), let mid = c.readU8(), let lo = c.readU8(), let b = c.readU8() else { return nil }
        let raw = UInt32(hi) << 16 | UInt32(mid) << 8 | UInt32(lo)
        let magnitude = raw & 0x7F_FFFF
        // Tenths of a degree: the thousands of the packed number, truncated as the device computes it.
        var t = Double(magnitude / 1000) / 10
        if raw & 0x80_0000 != 0 { t = -t }
        var r = SensorReading(format: .govee, model: model)
        if b & 0x80 != 0 || !deviceRange.contains(t) {
            // The device's error bit, or a temperature these devices cannot measure: the packed number
            // is not a measurement, and neither half of it is published.
            r.issues.insert(.outOfRange)
        } else {
            r.append(.temperature, t)
            r.append(.humidity, Double(magnitude % 1000) / 10)
        }
        r.append(.batteryPercent, Double(b & 0x7F))
        return r
    }
}
