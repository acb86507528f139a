import BLEHCI
import BLETransport
import Crypto
import _CryptoExtras

/// Victron Instant Readout ("Extra Manufacturer Data", manufacturer 0x02E1): `prefix 0x0010 LE | model id LE |
/// readout type | IV LE 2 | key check (the key's first octet) | AES-128-CTR record`. The counter block is the IV,
/// little-endian, in a 128-bit little-endian counter. The record is bit-packed least significant bit first.
/// Decoded: solar chargers (readout type 0x01) and battery monitors (0x02).
public enum VictronFrame {
    public static let prefix: UInt16 = 0x0010
    public static let solarCharger: UInt8 = 0x01
    public static let batteryMonitor: UInt8 = 0x02

    @inlinable static func decode(_ frame: ADReader, address: BDAddress, keys: SensorKeys) -> SensorReading? {
        var c = frame
        guard let p = c.readLE16(), p == prefix, c.readLE16() != nil, let type = c.readU8(), let iv = c.readLE16(),
            let check = c.readU8()
        else { return nil }
        let model: StaticString
        switch type {
        case solarCharger: model = "SolarCharger"
        case batteryMonitor: model = "BatteryMonitor"
        default: return nil
        }
        var r = SensorReading(format: .victron, model: model)
        r.wasEncrypted = true
        r.encryptionCounter = UInt32(iv)
        guard let key = keys.octets(for: address) else {
            r.issues.insert(.keyMissing)
            return r
        }
        // "The first data byte is a key check byte": a wrong key is known before decrypting.
        guard key.first == check else {
            r.issues.insert(.authenticationFailed)
            return r
        }
        let plain = decrypt(c.base[c.position..<c.end], iv: iv, key: key)
        var bits = VictronBits(plain)
        if type == solarCharger { solar(&bits, into: &r) } else { battery(&bits, into: &r) }
        return r
    }

    /// AES-128-CTR, counter block = IV little-endian, incremented little-endian.
    @usableFromInline static func decrypt(_ ciphertext: Slice<UnsafeBufferPointer<UInt8>>, iv: UInt16, key: [UInt8])
        -> [UInt8]
    {
        let symmetric = SymmetricKey(data: key)
        var out = Array(ciphertext)
        var counter = UInt64(iv)
        var offset = 0
        while offset < out.count {
            var block = [UInt8](repeating: 0, count: 16)
            for k in 0..<8 { block[k] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(k))) }
            try? AES.permute(&block, key: symmetric)
            for k in 0..<min(16, out.count - offset) { out[offset + k] ^= block[k] }
            offset += 16
            counter &+= 1
        }
        return out
    }

    @usableFromInline static func solar(_ b: inout VictronBits, into r: inout SensorReading) {
        let state = b.unsigned(8)
        let error = b.unsigned(8)
        let volts = b.signed(16)
        let amps = b.signed(16)
        let yield = b.unsigned(16)
        let power = b.unsigned(16)
        let load = b.unsigned(9)
        guard b.complete else {
            r.issues.insert(.truncated)
            return
        }
        if state != 0xFF { r.append(.chargeState, Double(state)) }
        if error != 0xFF { r.append(.chargerError, Double(error)) }
        if volts != 0x7FFF { r.append(.voltage, Double(volts) / 100) }
        if amps != 0x7FFF { r.append(.current, Double(amps) / 10) }
        if yield != 0xFFFF { r.append(.energy, Double(yield) / 100) }  // 10 Wh steps, published in kWh
        if power != 0xFFFF { r.append(.power, Double(power)) }
        if load != 0x1FF { r.append(.loadCurrent, Double(load) / 10) }
    }

    @usableFromInline static func battery(_ b: inout VictronBits, into r: inout SensorReading) {
        let remaining = b.unsigned(16)
        let volts = b.signed(16)
        _ = b.unsigned(16)  // alarm reason
        let aux = b.unsigned(16)
        let auxMode = b.unsigned(2)
        let milliamps = b.signed(22)
        let consumed = b.unsigned(20)
        let soc = b.unsigned(10)
        guard b.complete else {
            r.issues.insert(.truncated)
            return
        }
        if remaining != 0xFFFF { r.append(.remainingTime, Double(remaining) * 60) }
        if volts != 0x7FFF { r.append(.voltage, Double(volts) / 100) }
        r.append(.current, Double(milliamps) / 1000)
        if consumed != 0xF_FFFF { r.append(.consumedAmpHours, -Double(consumed) / 10) }
        if soc != 0x3FF { r.append(.batteryPercent, Double(soc) / 10) }
        switch auxMode {
        case 0: r.append(.starterVoltage, Double(Int16(truncatingIfNeeded: aux)) / 100)
        case 1: r.append(.midpointVoltage, Double(aux) / 100)
        case 2: r.append(.temperature, Double(aux) / 100 - 273.15)
        default: break
        }
    }
}

/// Reads bit fields packed least significant bit first; `complete` is false once a read ran past the end.
@usableFromInline struct VictronBits {
    @usableFromInline let bytes: [UInt8]
    @usableFromInline var position = 0
    @usableFromInline var complete = true

    @usableFromInline init(_ bytes: [UInt8]) { self.bytes = bytes }

    @usableFromInline mutating func unsigned(_ n: Int) -> Int64 {
        var v: Int64 = 0
        for k in 0..<n {
            guard position >> 3 < bytes.count else {
                complete = false
                return 0
            }
            v |= Int64(bytes[position >> 3] >> UInt8(position & 7) & 1) << Int64(k)
            position += 1
        }
        return v
    }

    @usableFromInline mutating func signed(_ n: Int) -> Int64 {
        let v = unsigned(n)
        return v & (1 << Int64(n - 1)) != 0 ? v - (1 << Int64(n)) : v
    }
}
