import BLEDomain
import BLEHCI
import BLETransport
import Crypto
import Yams

/// `regions:` and `identity_keys:` (docs/CONFIG.md), read with the same positional errors as the rest of the file.
extension YAMLConfigurationReader {
    /// A list of regions, each `{id, <one identity>, enter_rssi?, exit_rssi?, exit_timeout_s?, exit_dwell_s?}`.
    mutating func regions(_ node: Node, _ path: String) throws -> [Region] {
        guard case .sequence(let seq) = node else { throw fail(node, path, "expected a list of regions") }
        var ids: Set<String> = []
        var out: [Region] = []
        for (i, element) in seq.enumerated() {
            let p = "\(path)[\(i)]"
            let region = try region(element, p)
            guard ids.insert(region.id).inserted else {
                let idNode = (try? mapping(element, p))?.first { $0.0 == "id" }?.1 ?? element
                throw fail(idNode, "\(p).id", "duplicate region id \"\(region.id)\"")
            }
            out.append(region)
        }
        return out
    }

    /// The identity families a region may name; exactly one per region.
    private enum Family: String {
        case uuid, namespace, address
        case namePrefix = "name_prefix"
    }

    mutating func region(_ node: Node, _ p: String) throws -> Region {
        var id: String?
        var family: (Family, Node)?
        var uuid: BluetoothUUID?
        var major: (UInt16, Node)?
        var minor: (UInt16, Node)?
        var namespace: (UInt64, UInt16)?
        var instance: (UInt64, Node)?
        var address: BDAddress?
        var prefix: String?
        var enter: Double?
        var exit: (Double, Node)?
        var timeout = 10.0
        var dwell = 5.0
        func identity(_ f: Family, _ v: Node) throws {
            if let (other, _) = family {
                throw fail(
                    v, "\(p).\(f.rawValue)",
                    "a region has exactly one identity: \(other.rawValue) is already given")
            }
            family = (f, v)
        }
        for (k, v) in try mapping(node, p) {
            let kp = "\(p).\(k)"
            switch k {
            case "id":
                let s = try string(v, kp)
                guard s.utf8.allSatisfy({ Self.topicLevelCharacter($0) }) else {
                    throw fail(
                        v, kp,
                        "a region id is one topic level of letters, digits, '.', '_' or '-', found \"\(s)\"")
                }
                // The same bound as the gateway id's and the prefix's levels: topics and file names stay short.
                guard s.utf8.count <= 64 else {
                    throw fail(v, kp, "a region id is at most 64 characters, found \(s.utf8.count)")
                }
                id = s
            case "uuid":
                try identity(.uuid, v)
                let s = try string(v, kp)
                guard let u = BluetoothUUID(s), s.count >= 32 else {
                    throw fail(v, kp, "expected a 128-bit UUID (8-4-4-4-12 hex digits), found \"\(s)\"")
                }
                uuid = u
            case "major": major = (UInt16(try int(v, kp, 0...0xFFFF)), v)
            case "minor": minor = (UInt16(try int(v, kp, 0...0xFFFF)), v)
            case "namespace":
                try identity(.namespace, v)
                let s = try string(v, kp)
                guard s.utf8.count == 20, let high = HexDigits.number(s.prefix(16), digits: 16),
                    let low = HexDigits.number(s.suffix(4), digits: 4).map(UInt16.init)
                else {
                    throw fail(v, kp, "expected an Eddystone namespace of 20 hex digits, found \"\(s)\"")
                }
                namespace = (high, low)
            case "instance":
                let s = try string(v, kp)
                guard let n = HexDigits.number(s, digits: 12) else {
                    throw fail(v, kp, "expected an Eddystone instance of 12 hex digits, found \"\(s)\"")
                }
                instance = (n, v)
            case "address":
                try identity(.address, v)
                let s = try string(v, kp)
                guard let a = BDAddress(s) else {
                    throw fail(v, kp, "expected an address like AA:BB:CC:DD:EE:FF, found \"\(s)\"")
                }
                address = a
            case "name_prefix":
                try identity(.namePrefix, v)
                prefix = try string(v, kp)
            case "enter_rssi": enter = try double(v, kp, -127...20)
            case "exit_rssi": exit = (try double(v, kp, -127...20), v)
            case "exit_timeout_s": timeout = try double(v, kp, 0.1...86400)
            case "exit_dwell_s": dwell = try double(v, kp, 0.1...86400)
            default: unknown(v, kp)
            }
        }
        guard let id else { throw fail(node, "\(p).id", "a region needs an id") }
        if let (_, v) = major, uuid == nil { throw fail(v, "\(p).major", "major narrows a uuid: give the uuid") }
        if let (_, v) = minor, major == nil { throw fail(v, "\(p).minor", "minor narrows a major: give the major") }
        if let (_, v) = instance, namespace == nil {
            throw fail(v, "\(p).instance", "instance narrows a namespace: give the namespace")
        }
        if let (x, v) = exit, let enter, x > enter {
            throw fail(
                v, "\(p).exit_rssi",
                "exit_rssi (\(x)) must not be above enter_rssi (\(enter)): the band between is the hysteresis")
        }
        let matcher: BeaconMatcher
        switch family?.0 {
        case .uuid?: matcher = .iBeacon(uuid: uuid!, major: major?.0, minor: minor?.0)
        case .namespace?:
            matcher = .eddystone(namespaceHigh: namespace!.0, namespaceLow: namespace!.1, instance: instance?.0)
        case .address?: matcher = .address(address!)
        case .namePrefix?: matcher = .namePrefix(prefix!)
        case nil: throw fail(node, p, "a region needs one identity: uuid, namespace, address or name_prefix")
        }
        return Region(
            id: id, matcher: matcher, enterRSSI: enter, exitRSSI: exit?.0,
            exitDwell: .milliseconds(Int64(dwell * 1000)), exitTimeout: .milliseconds(Int64(timeout * 1000)))
    }

    /// [A-Za-z0-9._-]: safe as one MQTT topic level (no '/', '+', '#') and in a file name.
    static func topicLevelCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A list of IRKs: 32 hex digits, most significant first, or `{irk, name?, address?}`. `address` is the device's
    /// identity address; without one, a random static address derived from a hash of the key stands for the device
    /// (stable across restarts, and it reveals nothing of the key).
    mutating func identityKeys(_ node: Node, _ path: String) throws -> [IdentityResolvingKey] {
        try identityEntries(node, path).map(\.key)
    }

    /// The same list with each entry's name ("" when it has none): the identities file's reader too.
    mutating func identityEntries(_ node: Node, _ path: String) throws -> [(name: String, key: IdentityResolvingKey)] {
        guard case .sequence(let seq) = node else {
            throw fail(node, path, "expected a list of identity resolving keys")
        }
        var out: [(name: String, key: IdentityResolvingKey)] = []
        for (i, element) in seq.enumerated() {
            let p = "\(path)[\(i)]"
            var irk: (String, Node)?
            var identity: BDAddress?
            var name = ""
            var scalar = false
            if case .scalar = element {
                scalar = true
                irk = (try string(element, p), element)
            } else {
                for (k, v) in try mapping(element, p) {
                    switch k {
                    case "irk": irk = (try string(v, "\(p).irk"), v)
                    case "name": name = try string(v, "\(p).name")
                    case "address":
                        let s = try string(v, "\(p).address")
                        guard let a = BDAddress(s) else {
                            throw fail(v, "\(p).address", "expected an address like AA:BB:CC:DD:EE:FF, found \"\(s)\"")
                        }
                        identity = a
                    default: unknown(v, "\(p).\(k)")
                    }
                }
            }
            guard let (hex, v) = irk else { throw fail(element, "\(p).irk", "an identity key needs its irk") }
            let kp = scalar ? p : "\(p).irk"
            guard hex.count == 32, hex.allSatisfy(\.isHexDigit),
                let key = IdentityResolvingKey(hex: hex, identity: identity ?? Self.derivedIdentity(hex))
            else {
                throw fail(v, kp, "expected an IRK of 32 hex digits, found \(hex.count) characters")
            }
            guard !out.contains(where: { $0.key.octets == key.octets }) else {
                throw fail(v, kp, "duplicate identity key")
            }
            out.append((name, key))
        }
        return out
    }

    /// A random static address (top bits 0b11, Vol 6, Part B, §1.3.2.1) from SHA-256 of the key's hex digits.
    static func derivedIdentity(_ hex: String) -> BDAddress {
        let digest = Array(SHA256.hash(data: Array(hex.lowercased().utf8)))
        let raw = digest.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return BDAddress(rawValue: raw | 0xC000_0000_0000)
    }
}
