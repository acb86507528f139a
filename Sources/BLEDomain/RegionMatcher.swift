import BLEHCI
import BLETransport

/// Which beacons a region (or a calibration override) covers, from the widest to a single device.
/// Matching is on the stable identity (after private-address resolution), never on a raw address
/// that rotates.
public enum BeaconMatcher: Hashable, Sendable, CustomStringConvertible {
    /// iBeacon by proximity UUID, optionally narrowed to a major, then a minor.
    case iBeacon(uuid: BluetoothUUID, major: UInt16? = nil, minor: UInt16? = nil)
    /// Eddystone-UID by namespace, optionally narrowed to one instance.
    case eddystone(namespaceHigh: UInt64, namespaceLow: UInt16, instance: UInt64? = nil)
    /// One AltBeacon id.
    case altBeacon(idHigh: UInt64, idMiddle: UInt64, idLow: UInt32)
    /// A device by (identity) address.
    case address(BDAddress)
    /// Devices whose advertised local name starts with these UTF-8 octets.
    case namePrefix([UInt8])

    public static func namePrefix(_ s: String) -> BeaconMatcher { .namePrefix(Array(s.utf8)) }

    /// Whether a sighting of `identity` (advertising `name`, if any) is covered.
    @inlinable public func matches(_ identity: BeaconIdentity, name: ArraySlice<UInt8>?) -> Bool {
        switch (self, identity) {
        case (.iBeacon(let u, let major, let minor), .iBeacon(let uuid, let ma, let mi)):
            return u == uuid && (major == nil || major == ma) && (minor == nil || minor == mi)
        case (.eddystone(let h, let l, let inst), .eddystone(let nh, let nl, let i)):
            return h == nh && l == nl && (inst == nil || inst == i)
        case (.altBeacon(let h, let m, let l), .altBeacon(let ih, let im, let il)):
            return h == ih && m == im && l == il
        case (.address(let a), .address(let b)):
            return a == b
        case (.namePrefix(let p), _):
            guard let name, name.count >= p.count else { return false }
            return name.prefix(p.count).elementsEqual(p)
        default:
            return false
        }
    }

    /// Whether matching needs the advertised name (so callers can skip decoding it otherwise).
    @inlinable public var needsName: Bool {
        if case .namePrefix = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .iBeacon(let u, let major, let minor):
            "ibeacon \(u)" + (major.map { " major \($0)" } ?? "") + (minor.map { " minor \($0)" } ?? "")
        case .eddystone(let h, let l, let i):
            BeaconIdentity.eddystone(namespaceHigh: h, namespaceLow: l, instance: i ?? 0).id
                + (i == nil ? " (any instance)" : "")
        case .altBeacon(let h, let m, let l): BeaconIdentity.altBeacon(idHigh: h, idMiddle: m, idLow: l).id
        case .address(let a): "address \(a)"
        case .namePrefix(let p): "name prefix \"\(String(decoding: p, as: UTF8.self))\""
        }
    }
}
