/// RuuviTag data format 5, "RAWv2" (docs.ruuvi.com, dataformat_05), manufacturer 0x0499, 24 octets
/// big-endian: `05 | temperature int16 0.005 °C | humidity uint16 0.0025 % | pressure uint16 Pa − 50000 |
/// acceleration X, Y, Z int16 mG | power: battery 11 bits mV − 1600, TX power 5 bits 2 dBm − 40 |
/// movement counter | measurement sequence uint16 | MAC 6`.
/// Each field's all-ones (or 0x8000 for signed) value means "not available" and is left out.
public enum RuuviFrame {
    public static let format5: UInt8 = 0x05
    public static let format5Length = 24
    /// Standard gravity, to turn milli-g into m/s².
    public static let standardGravity = 9.806_65

    public static let format6: UInt8 = 0x06
    public static let format6Length = 20
    public static let formatE1: UInt8 = 0xE1
    public static let formatE1Length = 40

    public static let format3: UInt8 = 0x03
    public static let format3Length = 14

    @inlinable static func decode(_ frame: ADReader) -> SensorReading? {
        var c = frame
        switch c.readU8() {
        case format3: return decode3(frame)
        case format5: return decode5(frame)
        case format6: return RuuviAirFrame.decode6(frame)
        case formatE1: return RuuviAirFrame.decodeE1(frame)
        default: return nil
        }
    }

    /// Data format 3, "RAWv1" (docs.ruuvi.com, dataformat_03; still sent by tags on older firmware), 14 octets
    /// big-endian: `03 | humidity uint8 0.5 % | temperature: sign bit and whole degrees, then hundredths |
    /// pressure uint16 Pa − 50000 | acceleration X, Y, Z int16 mG | battery uint16 mV`. It has no "not available"
    /// values (hundredths past 99 are malformed: no temperature), no TX power, movement counter, sequence or MAC.
    @inlinable static func decode3(_ frame: ADReader) -> SensorReading? {
        var c = frame
        guard c.readU8() == format3 else { return nil }
        var r = SensorReading(format: .ruuviV3, model: "RuuviTag")
        guard frame.remaining == format3Length, let h = c.readU8(), let whole = c.readU8(), let hundredths = c.readU8(),
            let p = c.readBE16(), let ax = c.readBE16(), let ay = c.readBE16(), let az = c.readBE16(),
            let battery = c.readBE16()
        else {
            r.issues.insert(.truncated)
            return r
        }
        r.append(.humidity, Double(h) * 0.5)
        // Hundredths past 99 are no temperature (ruuvitag-ble leaves it out too).
        if hundredths < 100 {
            let magnitude = Double(whole & 0x7F) + Double(hundredths) / 100
            r.append(.temperature, whole & 0x80 != 0 ? -magnitude : magnitude)
        }
        r.append(.pressure, (Double(p) + 50_000) / 100)
        for (q, a) in [(SensorQuantity.accelerationX, ax), (.accelerationY, ay), (.accelerationZ, az)] {
            r.append(q, Double(Int16(bitPattern: a)) / 1000 * standardGravity)
        }
        r.append(.voltage, Double(battery) / 1000)
        return r
    }

    @inlinable static func decode5(_ frame: ADReader) -> SensorReading? {
        var c = frame
        guard c.readU8() == format5 else { return nil }
        var r = SensorReading(format: .ruuviV5, model: "RuuviTag")
        guard frame.remaining == format5Length, let t = c.readBE16(), let h = c.readBE16(), let p = c.readBE16(),
            let ax = c.readBE16(), let ay = c.readBE16(), let az = c.readBE16(), let power = c.readBE16(),
            let movement = c.readU8(), let sequence = c.readBE16()
        else {
            r.issues.insert(.truncated)
            return r
        }
        let notAvailableSigned: UInt16 = 0x8000
        if t != notAvailableSigned { r.append(.temperature, Double(Int16(bitPattern: t)) * 0.005) }
        if h != 0xFFFF { r.append(.humidity, Double(h) * 0.0025) }
        if p != 0xFFFF { r.append(.pressure, (Double(p) + 50_000) / 100) }
        for (q, a) in [(SensorQuantity.accelerationX, ax), (.accelerationY, ay), (.accelerationZ, az)]
        where a != notAvailableSigned {
            r.append(q, Double(Int16(bitPattern: a)) / 1000 * standardGravity)
        }
        let batteryRaw = power >> 5
        let txRaw = power & 0x1F
        if batteryRaw != 0x7FF { r.append(.voltage, (Double(batteryRaw) + 1600) / 1000) }
        if txRaw != 0x1F { r.append(.txPower, Double(txRaw) * 2 - 40) }
        if movement != 0xFF { r.append(.movementCounter, Double(movement)) }
        if sequence != 0xFFFF { r.counter = UInt32(sequence) }
        return r
    }
}
