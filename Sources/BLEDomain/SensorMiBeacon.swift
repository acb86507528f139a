import BLEHCI
import BLETransport
import Crypto

/// Xiaomi MiBeacon, service data 0xFE95 (iot.mi.com "BLE object definition" and "MiBeacon"):
/// `frame control 2 | product id 2 | frame counter | [MAC 6 reversed] | [capability [IO 2]] | objects…`,
/// little-endian; objects are `id 2 | length | data`. Encrypted v4/v5 frames end with
/// `extended counter 3 | MIC 4` and are AES-CCM under the device's bindkey with nonce
/// `MAC reversed 6 | product id 2 | frame counter | extended counter 3` and associated data 0x11.
public enum MiBeaconFrame {
    // Frame control bits.
    public static let encryptedBit: UInt16 = 1 << 3
    public static let macIncludedBit: UInt16 = 1 << 4
    public static let capabilityIncludedBit: UInt16 = 1 << 5
    public static let objectIncludedBit: UInt16 = 1 << 6
    public static let meshBit: UInt16 = 1 << 7
    /// Capability octet bit saying two IO capability octets follow.
    public static let capabilityIOBit: UInt8 = 0x20
    public static let associatedData: UInt8 = 0x11

    // Object ids.
    /// `button 1 | value 1 | press type 1`: a remote control's or switch's press; what the press type means depends
    /// on the product (`buttonEvent(product:button:pressType:)`).
    public static let buttonObject: UInt16 = 0x1001
    public static let temperatureObject: UInt16 = 0x1004
    public static let humidityObject: UInt16 = 0x1006
    public static let illuminanceObject: UInt16 = 0x1007
    public static let moistureObject: UInt16 = 0x1008
    public static let conductivityObject: UInt16 = 0x1009
    public static let batteryObject: UInt16 = 0x100A
    public static let temperatureHumidityObject: UInt16 = 0x100D
    public static let formaldehydeObject: UInt16 = 0x1010
    public static let batteryV5Object: UInt16 = 0x4803
    public static let temperatureFloatObject: UInt16 = 0x4C01
    public static let humidityByteObject: UInt16 = 0x4C02
    public static let humidityFloatObject: UInt16 = 0x4C08

    @inlinable static func decode(_ frame: ADReader, address: BDAddress, keys: SensorKeys) -> SensorReading? {
        var c = frame
        guard let control = c.readLE16(), let product = c.readLE16(), let counter = c.readU8() else { return nil }
        let version = control >> 12
        guard control & meshBit == 0, version >= 2 else { return nil }
        var r = SensorReading(format: .miBeacon, model: model(product))
        r.counter = UInt32(counter)
        if control & macIncludedBit != 0 {
            guard let lo = c.readLE32(), let hi = c.readLE16() else {
                r.issues.insert(.truncated)
                return r
            }
            // Another device's MAC: a relayed or corrupted frame, not this advertiser's reading.
            guard UInt64(hi) << 32 | UInt64(lo) == address.rawValue else { return nil }
        }
        if control & capabilityIncludedBit != 0 {
            guard let capability = c.readU8(), capability & capabilityIOBit == 0 || c.readLE16() != nil else {
                r.issues.insert(.truncated)
                return r
            }
        }
        guard control & objectIncludedBit != 0 else { return r }
        guard control & encryptedBit != 0 else {
            decodeObjects(c, product: product, into: &r)
            return r
        }
        r.wasEncrypted = true
        guard version >= 4 else {
            // v2/v3 encryption (a different nonce and no extended counter) is not supported.
            r.issues.insert(.unsupported)
            return r
        }
        guard c.remaining >= 7 else {
            r.issues.insert(.truncated)
            return r
        }
        guard let ciphertext = c.readReader(c.remaining - 7), var ext = c.readReader(3), let mic = c.readReader(4)
        else { return r }
        let extCopy = ext
        if let e0 = ext.readU8(), let e1 = ext.readU8(), let e2 = ext.readU8() {
            r.encryptionCounter = UInt32(e2) << 24 | UInt32(e1) << 16 | UInt32(e0) << 8 | UInt32(counter)
        }
        guard let key = keys.key(for: address) else {
            r.issues.insert(.keyMissing)
            return r
        }
        decrypt(
            frame: frame, ciphertext: ciphertext, extendedCounter: extCopy, mic: mic, address: address, key: key,
            product: product, into: &r)
        return r
    }

    @usableFromInline static func decrypt(
        frame: ADReader, ciphertext: ADReader, extendedCounter: ADReader, mic: ADReader, address: BDAddress,
        key: SymmetricKey, product: UInt16, into r: inout SensorReading
    ) {
        var nonce: [UInt8] = []
        nonce.reserveCapacity(12)
        for k in 0..<6 { nonce.append(UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64(k)))) }
        nonce.append(contentsOf: frame.base[frame.position + 2..<frame.position + 5])
        nonce.append(contentsOf: extendedCounter.base[extendedCounter.position..<extendedCounter.end])
        guard
            let plain = SensorCCM.open(
                ciphertext: ciphertext.base[ciphertext.position..<ciphertext.end],
                tag: mic.base[mic.position..<mic.end],
                nonce: nonce, aad: [associatedData], key: key)
        else {
            r.issues.insert(.authenticationFailed)
            return
        }
        plain.withUnsafeBufferPointer { decodeObjects(ADReader($0), product: product, into: &r) }
    }

    @inlinable static func decodeObjects(_ objects: ADReader, product: UInt16, into r: inout SensorReading) {
        var c = objects
        while c.remaining > 0 {
            guard let id = c.readLE16(), let length = c.readU8(), var v = c.readReader(Int(length)) else {
                r.issues.insert(.truncated)
                return
            }
            switch (id, length) {
            case (buttonObject, 3):
                if let button = v.readU8(), v.readU8() != nil, let press = v.readU8(),
                    let code = buttonEvent(product: product, button: button, pressType: press)
                {
                    r.append(.buttonEvent, Double(code))
                }
            case (temperatureObject, 2):
                if let t = v.readLE16() { r.append(.temperature, Double(Int16(bitPattern: t)) / 10) }
            case (humidityObject, 2):
                if let h = v.readLE16() { r.append(.humidity, Double(h) / 10) }
            case (illuminanceObject, 3):
                if let lo = v.readLE16(), let hi = v.readU8() {
                    r.append(.illuminance, Double(UInt32(hi) << 16 | UInt32(lo)))
                }
            case (moistureObject, 1):
                if let m = v.readU8() { r.append(.moisture, Double(m)) }
            case (conductivityObject, 2):
                if let s = v.readLE16() { r.append(.conductivity, Double(s)) }
            case (batteryObject, 1), (batteryV5Object, 1):
                if let b = v.readU8() { r.append(.batteryPercent, Double(b)) }
            case (temperatureHumidityObject, 4):
                if let t = v.readLE16(), let h = v.readLE16() {
                    r.append(.temperature, Double(Int16(bitPattern: t)) / 10)
                    r.append(.humidity, Double(h) / 10)
                }
            case (formaldehydeObject, 2):
                if let f = v.readLE16() { r.append(.formaldehyde, Double(f) / 100) }
            case (temperatureFloatObject, 4):
                if let bits = v.readLE32() { r.append(.temperature, Double(Float(bitPattern: bits))) }
            case (humidityByteObject, 1):
                if let h = v.readU8() { r.append(.humidity, Double(h)) }
            case (humidityFloatObject, 4):
                if let bits = v.readLE32() { r.append(.humidity, Double(Float(bitPattern: bits))) }
            default:
                break  // objects this gateway does not publish (locks, other buttons, toothbrushes …)
            }
        }
    }

    // Products whose button object this gateway reads.
    public static let wirelessSwitchYLAI003: UInt16 = 0x07BF
    public static let wallSwitchK9B1: UInt16 = 0x1568

    /// A press as the gateway's event code (BTHome's: 1 press, 2 double press, 4 long press), as Home Assistant's
    /// xiaomi-ble reads it: the wireless switch YLAI003 says 0 press, 1 double, 2 long (3 is a press on button 0 and a
    /// long press on button 1, 5 a press, 6 a long press); the K9B wall switch says 0 press, 1 long, 2 double, on its
    /// button 0. Anything else (a rotation, another product's buttons, whose meaning is the product's own) is no event.
    @inlinable static func buttonEvent(product: UInt16, button: UInt8, pressType: UInt8) -> UInt8? {
        let press: UInt8 = 1
        let double: UInt8 = 2
        let long: UInt8 = 4
        switch (product, pressType) {
        case (wirelessSwitchYLAI003, 0), (wirelessSwitchYLAI003, 5): return press
        case (wirelessSwitchYLAI003, 1): return double
        case (wirelessSwitchYLAI003, 2), (wirelessSwitchYLAI003, 6): return long
        case (wirelessSwitchYLAI003, 3): return button == 0 ? press : button == 1 ? long : nil
        case (wallSwitchK9B1, 0) where button == 0: return press
        case (wallSwitchK9B1, 1) where button == 0: return long
        case (wallSwitchK9B1, 2) where button == 0: return double
        default: return nil
        }
    }

    /// Product ids of the common thermometers and plant sensors (Home Assistant's xiaomi-ble table).
    @inlinable static func model(_ product: UInt16) -> StaticString {
        switch product {
        case 0x055B: "LYWSD03MMC"
        case 0x01AA: "LYWSDCGQ"
        case 0x045B: "LYWSD02"
        case 0x16E4, 0x2542: "LYWSD02MMC"
        case 0x0347: "CGG1"
        case 0x0B48: "CGG1-ENCRYPTED"
        case 0x066F: "CGDK2"
        case 0x0576: "CGD1"
        case 0x0387: "MHO-C401"
        case 0x06D3: "MHO-C303"
        case 0x0098: "HHCCJCY01"
        case 0x015D: "HHCCPOT002"
        case 0x03BC: "GCLS002"
        case 0x02DF: "JQJCY01YM"
        case 0x2832, 0x4C47: "MJWSD05MMC"
        case 0x55B5, 0x5BEA: "MJWSD06MMC"
        case wirelessSwitchYLAI003: "YLAI003"
        case wallSwitchK9B1: "K9B-1BTN"
        default: "MiBeacon"
        }
    }
}
