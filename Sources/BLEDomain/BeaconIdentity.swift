import BLEHCI
import BLETransport

/// Who a sighting is about, stable across advertisements: the beacon's own identity when it has
/// one, otherwise its address. Hashable by value (no string is built to use it as a key).
///
/// `id` is the string used in MQTT topics and in the simulator's ground truth; its scheme is a
/// contract (characters only [a-z0-9-]):
///   iBeacon       `ibeacon-<32 hex uuid>-<major>-<minor>` (major and minor in decimal)
///   Eddystone UID `eddystone-<20 hex namespace>-<12 hex instance>`
///   AltBeacon     `altbeacon-<40 hex id>`
///   anything else `mac-<12 hex address>`
public enum BeaconIdentity: Hashable, Sendable, CustomStringConvertible {
    case iBeacon(uuid: BluetoothUUID, major: UInt16, minor: UInt16)
    case eddystone(namespaceHigh: UInt64, namespaceLow: UInt16, instance: UInt64)
    case altBeacon(idHigh: UInt64, idMiddle: UInt64, idLow: UInt32)
    case address(BDAddress)

    /// Identity of a sighting: the beacon's when it carries a stable id (Eddystone URL, TLM and EID
    /// frames do not), else the advertiser's address.
    @inlinable public init(beacon: Beacon?, address: BDAddress) {
        switch beacon {
        case .iBeacon(let b)?: self = .iBeacon(uuid: b.proximityUUID, major: b.major, minor: b.minor)
        case .eddystoneUID(let b)?:
            self = .eddystone(namespaceHigh: b.namespaceHigh, namespaceLow: b.namespaceLow, instance: b.instance)
        case .altBeacon(let b)?: self = .altBeacon(idHigh: b.idHigh, idMiddle: b.idMiddle, idLow: b.idLow)
        default: self = .address(address)
        }
    }

    /// Appends `id` without building a String.
    public func appendID(to out: inout [UInt8]) {
        switch self {
        case .iBeacon(let uuid, let major, let minor):
            out.append(contentsOf: "ibeacon-".utf8)
            HexDigits.append(uuid.high, digits: 16, upper: false, to: &out)
            HexDigits.append(uuid.low, digits: 16, upper: false, to: &out)
            out.append(UInt8(ascii: "-"))
            JSONWriter.appendDecimal(Int64(major), to: &out)
            out.append(UInt8(ascii: "-"))
            JSONWriter.appendDecimal(Int64(minor), to: &out)
        case .eddystone(let nh, let nl, let instance):
            out.append(contentsOf: "eddystone-".utf8)
            HexDigits.append(nh, digits: 16, upper: false, to: &out)
            HexDigits.append(UInt64(nl), digits: 4, upper: false, to: &out)
            out.append(UInt8(ascii: "-"))
            HexDigits.append(instance, digits: 12, upper: false, to: &out)
        case .altBeacon(let h, let m, let l):
            out.append(contentsOf: "altbeacon-".utf8)
            HexDigits.append(h, digits: 16, upper: false, to: &out)
            HexDigits.append(m, digits: 16, upper: false, to: &out)
            HexDigits.append(UInt64(l), digits: 8, upper: false, to: &out)
        case .address(let a):
            out.append(contentsOf: "mac-".utf8)
            HexDigits.append(a.rawValue, digits: 12, upper: false, to: &out)
        }
    }

    /// The stable id string, e.g. "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2".
    public var id: String {
        var out = [UInt8]()
        out.reserveCapacity(64)
        appendID(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { id }
}
