/// Qingping, service data 0xFDCD: `frame control | device id | MAC 6 | (id | size | data)…`,
/// little-endian: 0x01 temperature int16 0.1 °C + humidity uint16 0.1 %, 0x02 battery % (0xFF: mains),
/// 0x07 pressure uint16 0.1 hPa, 0x09 illuminance uint32 lx, 0x12 PM2.5 + PM10 uint16 each, 0x13 CO2 uint16 ppm.
public enum QingpingFrame {
    @inlinable static func decode(_ frame: ADReader) -> SensorReading? {
        var c = frame
        guard c.readU8() != nil, let device = c.readU8(), let model = model(device), c.readReader(6) != nil else {
            return nil
        }
        var r = SensorReading(format: .qingping, model: model)
        while let id = c.readU8() {
            guard let size = c.readU8(), var v = c.readReader(Int(size)) else {
                r.issues.insert(.truncated)
                break
            }
            switch (id, size) {
            case (0x01, 4):
                if let t = v.readLE16(), let h = v.readLE16() {
                    r.append(.temperature, Double(Int16(bitPattern: t)) / 10)
                    r.append(.humidity, Double(h) / 10)
                }
            case (0x02, 1):
                if let b = v.readU8() { r.append(.batteryPercent, b == 0xFF ? 100 : Double(b)) }
            case (0x07, 2):
                if let p = v.readLE16() { r.append(.pressure, Double(p) / 10) }
            case (0x09, 4):
                if let l = v.readLE32() { r.append(.illuminance, Double(l)) }
            case (0x12, 4):
                if let a = v.readLE16(), let b = v.readLE16() {
                    r.append(.pm25, Double(a))
                    r.append(.pm10, Double(b))
                }
            case (0x13, 2):
                if let co2 = v.readLE16() { r.append(.co2, Double(co2)) }
            default:
                break
            }
        }
        return r
    }

    /// The device ids whose layout is known; others are not decoded.
    @inlinable static func model(_ device: UInt8) -> StaticString? {
        switch device {
        case 0x01, 0x07, 0x16: "CGG1"
        case 0x04: "CGH1"
        case 0x09: "CGP1W"
        case 0x0C: "CGD1"
        case 0x0E, 0x24: "CGDN1"
        case 0x0F: "CGM1"
        case 0x10: "CGDK2"
        case 0x12: "CGPR1"
        case 0x15: "CGF1W"
        case 0x18, 0x26: "CGP23W"
        case 0x1E: "CGC1"
        case 0x33, 0x5D: "CGP22C"
        case 0x4F: "CGG3"
        case 0x52, 0x62: "CGR1PC"
        default: nil
        }
    }
}
