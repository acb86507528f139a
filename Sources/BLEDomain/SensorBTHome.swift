import BLEHCI
import BLETransport
import Crypto

/// BTHome v2 (bthome.io/format), service data 0xFCD2:
/// `device information | objects…`, or when encrypted `device information | ciphertext | counter 4 | MIC 4`.
public enum BTHomeFrame {
    /// Device information octet: bit 0 "encryption flag", bit 2 "trigger based device flag",
    /// bits 5–7 "BTHome version" (2).
    public static let encryptedFlag: UInt8 = 0x01
    /// Bit 1, as bthome-ble (Home Assistant's parser) reads it: the advertiser's MAC, 6 octets least significant first,
    /// comes before the objects (or the ciphertext), and is the address in the nonce.
    public static let macIncludedFlag: UInt8 = 0x02
    public static let triggerBasedFlag: UInt8 = 0x04
    /// The button events (object 0x3A) the format defines: none, press, double, triple, long, long double, long
    /// triple, hold. Another code names no event: not published (the reference publishes none either).
    public static let buttonEvents: Set<UInt8> = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x80]
    /// The dimmer events (object 0x3C): none, rotate left, rotate right.
    public static let dimmerEvents: ClosedRange<UInt8> = 0x00...0x02
    public static let version2: UInt8 = 2
    /// "The nonce is 13 bytes long and consists of: MAC address (6 bytes) + UUID (2 bytes) +
    /// BTHome Device Data (1 byte) + Counter (4 bytes)"; the MIC is 4 octets.
    public static let micLength = 4
    public static let counterLength = 4

    @inlinable static func decode(_ frame: ADReader, address: BDAddress, keys: SensorKeys) -> SensorReading? {
        var c = frame
        guard let info = c.readU8(), info >> 5 == version2 else { return nil }
        var reading = SensorReading(format: .bthome, model: "BTHome")
        var address = address
        if info & macIncludedFlag != 0 {
            guard var mac = c.readReader(6) else {
                reading.issues.insert(.truncated)
                return reading
            }
            var raw: UInt64 = 0
            for k in 0..<6 { raw |= UInt64(mac.readU8()!) << (8 * UInt64(k)) }
            address = BDAddress(rawValue: raw)
        }
        guard info & encryptedFlag != 0 else {
            decodeObjects(c, into: &reading)
            return reading
        }
        reading.wasEncrypted = true
        guard c.remaining >= counterLength + micLength else {
            reading.issues.insert(.truncated)
            return reading
        }
        let payloadLength = c.remaining - counterLength - micLength
        guard let ciphertext = c.readReader(payloadLength), let counterReader = c.readReader(counterLength),
            let mic = c.readReader(micLength)
        else { return reading }
        var counterCopy = counterReader
        reading.encryptionCounter = counterCopy.readLE32()
        guard let key = keys.key(for: address) else {
            reading.issues.insert(.keyMissing)
            return reading
        }
        decrypt(
            info: info, ciphertext: ciphertext, counter: counterReader, mic: mic, address: address, key: key,
            into: &reading)
        return reading
    }

    /// The slow path, only for encrypted frames with a key: allocates its blocks.
    @usableFromInline static func decrypt(
        info: UInt8, ciphertext: ADReader, counter: ADReader, mic: ADReader, address: BDAddress, key: SymmetricKey,
        into reading: inout SensorReading
    ) {
        var nonce: [UInt8] = []
        nonce.reserveCapacity(13)
        for k in (0..<6).reversed() { nonce.append(UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64(k)))) }
        nonce.append(UInt8(truncatingIfNeeded: SensorSource.bthomeUUID))
        nonce.append(UInt8(truncatingIfNeeded: SensorSource.bthomeUUID >> 8))
        nonce.append(info)
        nonce.append(contentsOf: counter.base[counter.position..<counter.end])
        guard
            let plain = SensorCCM.open(
                ciphertext: ciphertext.base[ciphertext.position..<ciphertext.end],
                tag: mic.base[mic.position..<mic.end], nonce: nonce, key: key)
        else {
            reading.issues.insert(.authenticationFailed)
            return
        }
        plain.withUnsafeBufferPointer { decodeObjects(ADReader($0), into: &reading) }
    }

    /// Objects `id | value`, little-endian. An id not in the specification ends the walk ("stop
    /// parsing"), keeping what came before; so does an object cut short.
    @inlinable static func decodeObjects(_ objects: ADReader, into reading: inout SensorReading) {
        var c = objects
        while let id = c.readU8() {
            guard let object = BTHomeObject.forID(id) else {
                reading.issues.insert(.unknownObject)
                return
            }
            if object.length == 0 {
                // Text, raw, command: a length octet, then that many octets (command: opcode + args).
                guard let lengthOctet = c.readU8() else {
                    reading.issues.insert(.truncated)
                    return
                }
                let n = id == BTHomeObject.command ? 1 + Int(lengthOctet & 0x1F) : Int(lengthOctet)
                guard c.readReader(n) != nil else {
                    reading.issues.insert(.truncated)
                    return
                }
                continue
            }
            guard var v = c.readReader(Int(object.length)) else {
                reading.issues.insert(.truncated)
                return
            }
            if id == BTHomeObject.dimmerEvent {
                if let event = v.readU8(), let steps = v.readU8() {
                    guard dimmerEvents.contains(event) else {
                        reading.issues.insert(.outOfRange)
                        continue
                    }
                    reading.append(.dimmerEvent, Double(event))
                    reading.append(.dimmerSteps, Double(steps))
                }
                continue
            }
            if id == BTHomeObject.buttonEvent {
                var peek = v
                if let code = peek.readU8(), !buttonEvents.contains(code) {
                    reading.issues.insert(.outOfRange)
                    continue
                }
            }
            var raw: UInt64 = 0
            var k = 0
            while let b = v.readU8() {
                raw |= UInt64(b) << (8 * UInt64(k))
                k += 1
            }
            if id == 0x00 { reading.counter = UInt32(raw) }
            // Device information (0xF0…0xF2) describes the device, not a reading.
            if id >= 0xF0 { continue }
            let bits = 8 * Int(object.length)
            let value: Double
            if object.quantity.isBinary {
                // "0 = False, 1 = True"; any other octet is read as true, as Home Assistant does.
                value = raw == 0 ? 0 : 1
            } else if object.isSigned && bits < 64 && raw >> UInt64(bits - 1) & 1 == 1 {
                value = Double(Int64(bitPattern: raw) - (Int64(1) << Int64(bits)))
            } else {
                value = Double(raw)
            }
            reading.append(object.quantity, value * object.factor)
        }
    }
}
