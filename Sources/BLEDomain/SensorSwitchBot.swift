/// SwitchBot Meter / Meter Plus / Outdoor Meter, service data 0xFD3D (0x0D00 on old firmware), as
/// SwitchBot's open API documents the broadcast: `device type | status | battery (bits 0–6) |
/// temperature decimal (bits 0–3) | temperature integer (bits 0–6; bit 7 set: above zero) |
/// humidity % (bits 0–6)`.
public enum SwitchBotFrame {
    /// Device type octets: 'T' Meter, 'i' Meter Plus, 'w' Outdoor Meter. Bit 7 set is the encrypted mode, whose
    /// octets are not these fields: not decoded.
    public static let meter: UInt8 = 0x54
    public static let meterPlus: UInt8 = 0x69
    public static let outdoorMeter: UInt8 = 0x77
    public static let frameLength = 6

    @inlinable static func decode(_ frame: ADReader) -> SensorReading? {
        var c = frame
        guard frame.remaining == frameLength, let type = c.readU8() else { return nil }
        let model: StaticString
        switch type {
        case meter: model = "Meter"
        case meterPlus: model = "MeterPlus"
        case outdoorMeter: model = "OutdoorMeter"
        default: return nil
        }
        var r = SensorReading(format: .switchBot, model: model)
        guard c.readU8() != nil, let b = c.readU8(), let dec = c.readU8(), let int = c.readU8(), let h = c.readU8()
        else {
            r.issues.insert(.truncated)
            return r
        }
        let magnitude = Double(int & 0x7F) + Double(dec & 0x0F) / 10
        r.append(.temperature, int & 0x80 != 0 ? magnitude : -magnitude)
        r.append(.humidity, Double(h & 0x7F))
        r.append(.batteryPercent, Double(b & 0x7F))
        return r
    }
}
