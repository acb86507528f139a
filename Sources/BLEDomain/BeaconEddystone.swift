import BLEHCI
import BLETransport

/// Eddystone frames, carried as 16-bit service data for UUID 0xFEAA (google/eddystone
/// protocol-specification.md). The first octet is the frame type; every multi-octet field is
/// big-endian.
public enum EddystoneFrame {
    public static let serviceUUID: UInt16 = 0xFEAA

    @usableFromInline static let uid: UInt8 = 0x00
    @usableFromInline static let url: UInt8 = 0x10
    @usableFromInline static let tlm: UInt8 = 0x20
    @usableFromInline static let eid: UInt8 = 0x30

    /// Dispatches on the frame type; nil for unknown types and malformed frames.
    @inlinable public static func decode(_ frame: ArraySlice<UInt8>) -> Beacon? {
        frame.withUnsafeBufferPointer { decode(reading: ADReader($0)) }
    }

    @inlinable static func decode(reading frame: ADReader) -> Beacon? {
        var body = frame
        guard let type = body.readU8() else { return nil }
        switch type {
        case uid: return EddystoneUID(frameBody: body).map(Beacon.eddystoneUID)
        case url: return EddystoneURL(frameBody: body).map(Beacon.eddystoneURL)
        case tlm: return EddystoneTLM(frameBody: body).map(Beacon.eddystoneTLM)
        case eid: return EddystoneEID(frameBody: body).map(Beacon.eddystoneEID)
        default: return nil
        }
    }
}

/// Eddystone-UID (eddystone-uid.md): `00 | ranging data | namespace 10 | instance 6 | RFU 2`.
/// The two RFU octets are optional in practice; 17 or 19 octets after the frame type are accepted.
public struct EddystoneUID: Hashable, Sendable {
    /// Calibrated TX power at 0 m, dBm.
    public var txPowerAt0m: Int8
    /// Namespace octets 0…7 and 8…9.
    public var namespaceHigh: UInt64
    public var namespaceLow: UInt16
    /// The 48-bit instance.
    public var instance: UInt64

    @inlinable public init(txPowerAt0m: Int8, namespaceHigh: UInt64, namespaceLow: UInt16, instance: UInt64) {
        self.txPowerAt0m = txPowerAt0m
        self.namespaceHigh = namespaceHigh
        self.namespaceLow = namespaceLow
        self.instance = instance & 0xFFFF_FFFF_FFFF
    }

    @inlinable init?(frameBody b: ADReader) {
        var c = b
        guard b.remaining == 17 || b.remaining == 19, let tx = c.readI8(), let nh = c.readBE64(), let nl = c.readBE16(),
            let ih = c.readBE16(), let il = c.readBE32()
        else { return nil }
        self.init(txPowerAt0m: tx, namespaceHigh: nh, namespaceLow: nl, instance: UInt64(ih) << 32 | UInt64(il))
    }

    @inlinable public func appendNamespaceHex(to out: inout [UInt8]) {
        HexDigits.append(namespaceHigh, digits: 16, upper: false, to: &out)
        HexDigits.append(UInt64(namespaceLow), digits: 4, upper: false, to: &out)
    }

    @inlinable public func appendInstanceHex(to out: inout [UInt8]) {
        HexDigits.append(instance, digits: 12, upper: false, to: &out)
    }

    /// The service data (frame type first, RFU included) for encoders, the simulator, tests.
    public var frame: [UInt8] {
        var w = ByteWriter(capacity: 20)
        w.u8(EddystoneFrame.uid)
        w.i8(txPowerAt0m)
        w.be64(namespaceHigh)
        w.be16(namespaceLow)
        w.be16(UInt16(truncatingIfNeeded: instance >> 32))
        w.be32(UInt32(truncatingIfNeeded: instance))
        w.be16(0)
        return w.bytes
    }
}

/// Eddystone-URL (eddystone-url.md): `10 | tx power | scheme | encoded URL (≤ 17)`.
/// The URL stays encoded (17 octets at most, held inline) until someone asks for it.
public struct EddystoneURL: Hashable, Sendable {
    public var txPowerAt0m: Int8
    public var scheme: UInt8
    public var encoded: ShortBytes

    /// Nil when `encoded` is longer than the 17 octets the frame allows.
    @inlinable public init?(txPowerAt0m: Int8, scheme: UInt8, encoded: some Collection<UInt8>) {
        guard encoded.count <= 17, let e = ShortBytes(encoded) else { return nil }
        self.txPowerAt0m = txPowerAt0m
        self.scheme = scheme
        self.encoded = e
    }

    @inlinable init?(frameBody b: ADReader) {
        var c = b
        guard let tx = c.readI8(), let scheme = c.readU8(), scheme <= 0x03 else { return nil }
        self.init(txPowerAt0m: tx, scheme: scheme, encoded: c.readRest())
    }

    /// URL Scheme Prefix table.
    static let schemes = ["http://www.", "https://www.", "http://", "https://"]
    /// HTTP URL encoding table: octets 0x00…0x0D expand to these.
    static let expansions = [
        ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/", ".com", ".org", ".edu", ".net", ".info",
        ".biz", ".gov",
    ]

    /// The expanded URL. Octets the specification reserves (0x0E…0x20, 0x7F…0xFF) are shown
    /// percent-encoded so that an untrusted frame can never put control characters in a URL.
    public var url: String {
        var out = Array(Self.schemes[Int(scheme & 0x03)].utf8)
        for b in encoded {
            if b < 0x0E {
                out.append(contentsOf: Self.expansions[Int(b)].utf8)
            } else if b > 0x20 && b < 0x7F {
                out.append(b)
            } else {
                out.append(UInt8(ascii: "%"))
                HexDigits.append(UInt64(b), digits: 2, upper: true, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var frame: [UInt8] {
        [EddystoneFrame.url, UInt8(bitPattern: txPowerAt0m), scheme] + Array(encoded)
    }
}

/// Eddystone-TLM (eddystone-tlm/tlm-plain.md and tlm-encrypted.md).
public enum EddystoneTLM: Hashable, Sendable {
    /// Version 0x00: `20 00 | VBATT 2 | TEMP 2 | ADV_CNT 4 | SEC_CNT 4`.
    case plain(Plain)
    /// Version 0x01: `20 01 | ETLM 12 | SALT 2 | MIC 2` (16 octets); only the beacon's owner holds
    /// the key, so the gateway keeps the bytes and forwards them.
    case encrypted(ShortBytes)

    public struct Plain: Hashable, Sendable {
        /// Battery voltage in mV; 0 means "not supported".
        public var batteryMillivolts: UInt16
        /// Beacon temperature as signed 8.8 fixed point °C; 0x8000 (-128.0) means "not supported".
        public var temperatureRaw: Int16
        /// Advertising PDUs sent since power-up or reboot.
        public var advertisingCount: UInt32
        /// Time since power-up or reboot in 0.1 s units.
        public var uptimeDeciseconds: UInt32

        @inlinable public init(
            batteryMillivolts: UInt16, temperatureRaw: Int16, advertisingCount: UInt32, uptimeDeciseconds: UInt32
        ) {
            self.batteryMillivolts = batteryMillivolts
            self.temperatureRaw = temperatureRaw
            self.advertisingCount = advertisingCount
            self.uptimeDeciseconds = uptimeDeciseconds
        }

        public var batteryVolts: Double? { batteryMillivolts == 0 ? nil : Double(batteryMillivolts) / 1000 }
        public var temperatureCelsius: Double? {
            temperatureRaw == Int16(bitPattern: 0x8000) ? nil : Double(temperatureRaw) / 256
        }

        public var frame: [UInt8] {
            var w = ByteWriter(capacity: 14)
            w.u8(EddystoneFrame.tlm)
            w.u8(0)
            w.be16(batteryMillivolts)
            w.be16(UInt16(bitPattern: temperatureRaw))
            w.be32(advertisingCount)
            w.be32(uptimeDeciseconds)
            return w.bytes
        }
    }

    @inlinable init?(frameBody b: ADReader) {
        var c = b
        switch c.readU8() {
        case 0x00:
            guard c.remaining == 12, let v = c.readBE16(), let t = c.readBE16(), let a = c.readBE32(),
                let s = c.readBE32()
            else { return nil }
            self = .plain(
                Plain(
                    batteryMillivolts: v, temperatureRaw: Int16(bitPattern: t), advertisingCount: a,
                    uptimeDeciseconds: s))
        case 0x01:
            guard c.remaining == 16, let e = ShortBytes(c.readRest()) else { return nil }
            self = .encrypted(e)
        default:
            return nil
        }
    }
}

/// Eddystone-EID (eddystone-eid.md): `30 | ranging data | EID 8`. The id rotates; resolving it
/// needs the beacon's identity key, which lives with a resolver service, not here.
public struct EddystoneEID: Hashable, Sendable {
    public var txPowerAt0m: Int8
    public var eid: UInt64

    @inlinable public init(txPowerAt0m: Int8, eid: UInt64) {
        self.txPowerAt0m = txPowerAt0m
        self.eid = eid
    }

    @inlinable init?(frameBody b: ADReader) {
        var c = b
        guard b.remaining == 9, let tx = c.readI8(), let e = c.readBE64() else { return nil }
        self.init(txPowerAt0m: tx, eid: e)
    }

    public var frame: [UInt8] {
        var w = ByteWriter(capacity: 10)
        w.u8(EddystoneFrame.eid)
        w.i8(txPowerAt0m)
        w.be64(eid)
        return w.bytes
    }
}
