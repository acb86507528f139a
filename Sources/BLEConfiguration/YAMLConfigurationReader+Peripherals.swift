import BLEDomain
import BLEHCI
import BLETransport
import Yams

/// `connections:` and `peripherals:` (docs/CONFIG.md), read with the same positional errors as the rest of the file.
extension YAMLConfigurationReader {
    mutating func connections(_ node: Node, _ path: String) throws -> GatewayConfiguration.Connections {
        var c = GatewayConfiguration.Connections()
        try numbers(node, path, GatewayConfiguration.Connections.keys, into: &c)
        return c
    }

    /// `ranging:`: the tunable ranging parameters (GatewayConfiguration.Ranging), with the rule that spans keys.
    mutating func ranging(_ node: Node, _ path: String) throws -> GatewayConfiguration.Ranging {
        var r = GatewayConfiguration.Ranging()
        try numbers(node, path, GatewayConfiguration.Ranging.keys, into: &r)
        if let (key, why) = r.problem {
            let keyNode = (try? mapping(node, path))?.first { $0.0 == key }?.1 ?? node
            throw fail(keyNode, "\(path).\(key)", why)
        }
        return r
    }

    /// A mapping of number-valued keys read through their table (ConfigNumberKey).
    mutating func numbers<S>(_ node: Node, _ path: String, _ table: [ConfigNumberKey<S>], into section: inout S) throws
    {
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            guard let key = table.first(where: { $0.name == k }) else {
                unknown(v, p)
                continue
            }
            if key.whole {
                key.set(&section, Double(try int(v, p, Int(key.range.lowerBound)...Int(key.range.upperBound))))
            } else {
                key.set(&section, try double(v, p, key.range))
            }
        }
    }

    /// A list of `{address | name_prefix | service, name?, address_type?, subscribe?, read?, writable?}`.
    mutating func peripherals(_ node: Node, _ path: String) throws -> [PeripheralIntent] {
        guard case .sequence(let seq) = node else { throw fail(node, path, "expected a list of peripherals") }
        var out: [PeripheralIntent] = []
        var seen: [PeripheralIntent.Match: Int] = [:]
        for (i, element) in seq.enumerated() {
            let p = "\(path)[\(i)]"
            let intent = try peripheral(element, p)
            if let first = seen[intent.match] {
                throw fail(element, p, "the same device as \(path)[\(first)]: one entry per device")
            }
            seen[intent.match] = i
            out.append(intent)
        }
        return out
    }

    mutating func peripheral(_ node: Node, _ p: String) throws -> PeripheralIntent {
        var match: (PeripheralIntent.Match, String)?
        var name: String?
        var addressType: LEAddressType?
        var subscribe: [PeripheralIntent.Subscription] = []
        var reads: [PeripheralIntent.PeriodicRead] = []
        var writable: [PeripheralIntent.CharacteristicRef] = []
        func take(_ m: PeripheralIntent.Match, _ key: String, _ v: Node) throws {
            if let (_, other) = match {
                throw fail(
                    v, "\(p).\(key)",
                    "a peripheral is matched by exactly one of address, name_prefix or service: \(other) is already given"
                )
            }
            match = (m, key)
        }
        for (k, v) in try mapping(node, p) {
            let kp = "\(p).\(k)"
            switch k {
            case "address":
                let s = try string(v, kp)
                guard let a = BDAddress(s) else {
                    throw fail(v, kp, "expected an address like AA:BB:CC:DD:EE:FF, found \"\(s)\"")
                }
                try take(.address(a), k, v)
            case "name_prefix":
                let s = try string(v, kp)
                guard !s.isEmpty else { throw fail(v, kp, "an empty prefix would match every device") }
                try take(.namePrefix(s), k, v)
            case "service":
                try take(.service(try uuid(v, kp)), k, v)
            case "name": name = try string(v, kp)
            case "address_type":
                addressType = try oneOf(v, kp, ["public", "random"]) == "public" ? .public : .random
            case "subscribe":
                for (e, ep) in try list(v, kp) {
                    let (ref, extras) = try characteristicRef(e, ep, extra: ["indicate"])
                    let indicate = try extras["indicate"].map { try bool($0, "\(ep).indicate") }
                    subscribe.append(.init(characteristic: ref, indicate: indicate))
                }
            case "read":
                for (e, ep) in try list(v, kp) {
                    let (ref, extras) = try characteristicRef(e, ep, extra: ["interval_s"])
                    let interval = try extras["interval_s"].map { try double($0, "\(ep).interval_s", 0...86400) } ?? 0
                    reads.append(.init(characteristic: ref, intervalSeconds: interval))
                }
            case "writable":
                for (e, ep) in try list(v, kp) {
                    writable.append(try characteristicRef(e, ep, extra: []).0)
                }
            default: unknown(v, kp)
            }
        }
        guard let (m, _) = match else {
            throw fail(node, p, "a peripheral needs one of address, name_prefix or service")
        }
        if addressType != nil, case .address = m {
        } else if addressType != nil {
            throw fail(node, "\(p).address_type", "address_type applies to an address match only")
        }
        var intent = PeripheralIntent(match: m, name: name, addressType: addressType)
        intent.subscribe = subscribe
        intent.read = reads
        intent.writable = writable
        return intent
    }

    private func list(_ node: Node, _ path: String) throws -> [(Node, String)] {
        guard case .sequence(let seq) = node else { throw fail(node, path, "expected a list") }
        return seq.enumerated().map { ($0.element, "\(path)[\($0.offset)]") }
    }

    /// `{service?, characteristic}` plus the keys named in `extra`, returned by name for the caller to read.
    private mutating func characteristicRef(_ node: Node, _ p: String, extra: Set<String>) throws
        -> (PeripheralIntent.CharacteristicRef, [String: Node])
    {
        var service: BluetoothUUID?
        var characteristic: BluetoothUUID?
        var extras: [String: Node] = [:]
        for (k, v) in try mapping(node, p) {
            switch k {
            case "service": service = try uuid(v, "\(p).service")
            case "characteristic": characteristic = try uuid(v, "\(p).characteristic")
            case _ where extra.contains(k): extras[k] = v
            default: unknown(v, "\(p).\(k)")
            }
        }
        guard let characteristic else { throw fail(node, p, "a characteristic UUID is required") }
        return (.init(service: service, characteristic: characteristic), extras)
    }

    func uuid(_ node: Node, _ path: String) throws -> BluetoothUUID {
        let s = try string(node, path)
        guard let u = BluetoothUUID(s) else {
            throw fail(node, path, "expected a UUID (\"2A6E\" or 8-4-4-4-12 hex digits), found \"\(s)\"")
        }
        return u
    }
}
