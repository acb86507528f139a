import Foundation

/// Ruuvi Air's data formats (docs.ruuvi.com, data-format-6 and data-format-e1), manufacturer 0x0499, big-endian.
/// All-ones (0x8000 for signed) means "not available" and is left out. Octets after the documented length are
/// ignored (ruuvitag-ble does the same).
///
/// Format 6, 20 octets (legacy advertising): `06 | temperature int16 0.005 °C | humidity 0.0025 % |
/// pressure Pa − 50000 | PM2.5 0.1 µg/m³ | CO2 ppm | VOC index bits 8…1 | NOx index bits 8…1 |
/// luminosity (log scale) | sound dBA bits 8…1 | sequence | flags (bit 4 sound, 6 VOC, 7 NOx: bit 0 of each) |
/// MAC 3`.
///
/// Format E1, 40 octets (extended advertising): `E1 | temperature | humidity | pressure | PM1 | PM2.5 | PM4 |
/// PM10 | CO2 | VOC bits 8…1 | NOx bits 8…1 | luminosity 3 (0.01 lx) | reserved 3 | sequence 3 | flags |
/// reserved 5 | MAC 6`.
public enum RuuviAirFrame {
    /// Format 6 luminosity: `exp(code × ln(65536) / 254) − 1` lux, rounded.
    public static let luminosityLogScale = log(65536.0) / 254

    @inlinable static func nineBit(_ high: UInt8, _ flags: UInt8, bit: UInt8) -> UInt16? {
        let v = UInt16(high) << 1 | UInt16(flags >> bit & 1)
        return v == 0x1FF ? nil : v
    }

    @inlinable static func common(_ c: inout ADReader, into r: inout SensorReading) -> Bool {
        guard let t = c.readBE16(), let h = c.readBE16(), let p = c.readBE16() else { return false }
        if t != 0x8000 { r.append(.temperature, Double(Int16(bitPattern: t)) * 0.005) }
        if h != 0xFFFF { r.append(.humidity, Double(h) * 0.0025) }
        if p != 0xFFFF { r.append(.pressure, (Double(p) + 50_000) / 100) }
        return true
    }

    @inlinable static func decode6(_ frame: ADReader) -> SensorReading? {
        var c = frame
        var r = SensorReading(format: .ruuviV6, model: "Ruuvi Air")
        guard frame.remaining >= RuuviFrame.format6Length, c.readU8() != nil, common(&c, into: &r),
            let pm25 = c.readBE16(), let co2 = c.readBE16(), let voc = c.readU8(), let nox = c.readU8(),
            let lux = c.readU8(), let sound = c.readU8(), let sequence = c.readU8(), let flags = c.readU8()
        else {
            r.issues.insert(.truncated)
            return r
        }
        if pm25 != 0xFFFF { r.append(.pm25, Double(pm25) / 10) }
        if co2 != 0xFFFF { r.append(.co2, Double(co2)) }
        if let v = nineBit(voc, flags, bit: 6) { r.append(.vocIndex, Double(v)) }
        if let v = nineBit(nox, flags, bit: 7) { r.append(.noxIndex, Double(v)) }
        if lux != 0xFF { r.append(.illuminance, lux == 0 ? 0 : (exp(Double(lux) * luminosityLogScale) - 1).rounded()) }
        if let v = nineBit(sound, flags, bit: 4) { r.append(.soundLevel, Double(v) / 5 + 18) }
        r.counter = UInt32(sequence)
        return r
    }

    @inlinable static func decodeE1(_ frame: ADReader) -> SensorReading? {
        var c = frame
        var r = SensorReading(format: .ruuviE1, model: "Ruuvi Air")
        guard frame.remaining >= RuuviFrame.formatE1Length, c.readU8() != nil, common(&c, into: &r),
            let pm1 = c.readBE16(), let pm25 = c.readBE16(), let pm4 = c.readBE16(), let pm10 = c.readBE16(),
            let co2 = c.readBE16(), let voc = c.readU8(), let nox = c.readU8(), let luxHigh = c.readU8(),
            let luxLow = c.readBE16(), c.readReader(3) != nil, let seqHigh = c.readU8(), let seqLow = c.readBE16(),
            let flags = c.readU8()
        else {
            r.issues.insert(.truncated)
            return r
        }
        for (q, v) in [(SensorQuantity.pm1, pm1), (.pm25, pm25), (.pm4, pm4), (.pm10, pm10)] where v != 0xFFFF {
            r.append(q, Double(v) / 10)
        }
        if co2 != 0xFFFF { r.append(.co2, Double(co2)) }
        if let v = nineBit(voc, flags, bit: 6) { r.append(.vocIndex, Double(v)) }
        if let v = nineBit(nox, flags, bit: 7) { r.append(.noxIndex, Double(v)) }
        let lux = UInt32(luxHigh) << 16 | UInt32(luxLow)
        if lux != 0xFF_FFFF { r.append(.illuminance, Double(lux) / 100) }
        let sequence = UInt32(seqHigh) << 16 | UInt32(seqLow)
        if sequence != 0xFF_FFFF { r.counter = sequence }
        return r
    }
}
