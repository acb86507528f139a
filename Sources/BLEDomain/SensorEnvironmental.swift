import BLEHCI
import BLETransport

/// The custom firmwares for Xiaomi LYWSD03MMC-class thermometers, service data 0x181A:
/// - atc1441 (github.com/atc1441/ATC_MiThermometer, "Advertising format of the custom firmware"),
///   13 octets, big-endian:
///   `MAC 6 | temperature int16 0.1 °C | humidity % | battery % | battery mV 2 | frame counter`;
/// - pvvx (github.com/pvvx/ATC_MiThermometer, "Custom format"), 15 octets, little-endian:
///   `MAC 6 (reversed) | temperature int16 0.01 °C | humidity uint16 0.01 % | battery mV 2 | battery % |
///   counter | flags`.
/// The length alone tells them apart. A frame whose MAC is not the advertiser's is someone else's
/// (or corrupted) and is ignored.
public enum EnvironmentalFrame {
    public static let atc1441Length = 13
    public static let pvvxLength = 15

    @inlinable static func decode(_ frame: ADReader, address: BDAddress) -> SensorReading? {
        var c = frame
        switch frame.remaining {
        case atc1441Length:
            guard let hi = c.readBE16(), let lo = c.readBE32(), UInt64(hi) << 32 | UInt64(lo) == address.rawValue,
                let t = c.readBE16(), let h = c.readU8(), let b = c.readU8(),
                let mv = c.readBE16(), let n = c.readU8()
            else { return nil }
            var r = SensorReading(format: .atc1441, model: "LYWSD03MMC")
            r.counter = UInt32(n)
            r.append(.temperature, Double(Int16(bitPattern: t)) / 10)
            r.append(.humidity, Double(h))
            r.append(.batteryPercent, Double(b))
            r.append(.voltage, Double(mv) / 1000)
            return r
        case pvvxLength:
            guard let lo = c.readLE32(), let hi = c.readLE16(), UInt64(hi) << 32 | UInt64(lo) == address.rawValue,
                let t = c.readLE16(), let h = c.readLE16(), let mv = c.readLE16(),
                let b = c.readU8(), let n = c.readU8()
            else { return nil }
            var r = SensorReading(format: .pvvx, model: "LYWSD03MMC")
            r.counter = UInt32(n)
            r.append(.temperature, Double(Int16(bitPattern: t)) / 100)
            r.append(.humidity, Double(h) / 100)
            r.append(.batteryPercent, Double(b))
            r.append(.voltage, Double(mv) / 1000)
            return r
        default:
            return nil
        }
    }
}
