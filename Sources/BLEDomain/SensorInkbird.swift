/// Inkbird IBS-TH ("sps") and IBS-TH2 ("tps"): manufacturer data of 9 octets whose
/// "company id" is in fact the temperature (int16 LE, 0.01 °C), followed by humidity (uint16 LE,
/// 0.01 %), a probe flag, two octets of checksum and the battery (%). Only the name identifies it.
public enum InkbirdFrame {
    @inlinable static func recognises(name: ArraySlice<UInt8>) -> Bool {
        name.elementsEqual("sps".utf8) || name.elementsEqual("tps".utf8)
    }

    @inlinable static func decode(company: UInt16, frame: ADReader, name: ArraySlice<UInt8>) -> SensorReading? {
        var c = frame
        guard frame.remaining == 7, let h = c.readLE16(), c.readU8() != nil, c.readLE16() != nil,
            let b = c.readU8()
        else { return nil }
        var r = SensorReading(format: .inkbird, model: name.first == UInt8(ascii: "s") ? "IBS-TH" : "IBS-TH2")
        // A humidity or battery beyond 100 % marks a corrupted advertisement: none of it is a reading.
        guard h <= 10_000 || name.first != UInt8(ascii: "s"), b <= 100 else {
            r.issues.insert(.outOfRange)
            return r
        }
        r.append(.temperature, Double(Int16(bitPattern: company)) / 100)
        // The IBS-TH2 has no hygrometer; it (and the IBS-P01B under the same name) sends 0 or 0xFFFF there.
        if name.first == UInt8(ascii: "s") || (h != 0 && h != 0xFFFF) { r.append(.humidity, Double(h) / 100) }
        r.append(.batteryPercent, Double(b))
        return r
    }
}
