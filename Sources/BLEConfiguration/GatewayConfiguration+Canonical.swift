import BLEDomain
import BLEHCI
import BLETransport

/// Canonical JSON of the list and table sections (regions, peripherals, connections, ranging) for
/// `canonicalRemoteJSON`: object keys sorted, lists whose order carries no meaning sorted by their rendering, so the
/// hash on `config/state` is the same however a document orders them.
enum CanonicalJSON {
    /// A value rendered as JSON.
    typealias Value = [UInt8]

    static func object(_ fields: [(String, Value?)]) -> Value {
        var out: Value = [UInt8(ascii: "{")]
        for (n, (k, v)) in fields.compactMap({ f in f.1.map { (f.0, $0) } }).sorted(by: { $0.0 < $1.0 }).enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(k, to: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: v)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A list in canonical order: sorted bytewise by the items' renderings.
    static func set(_ items: [Value]) -> Value {
        var out: Value = [UInt8(ascii: "[")]
        for (n, item) in items.sorted(by: { $0.lexicographicallyPrecedes($1) }).enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: item)
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    static func string(_ s: String) -> Value {
        var out: Value = []
        JSONWriter.appendString(s, to: &out)
        return out
    }

    static func number(_ v: Double, digits: Int = 3) -> Value {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        var out: Value = []
        JSONWriter.appendFixed(Int64((v * scale).rounded()), scale: digits, to: &out)
        return out
    }

    static func int<I: BinaryInteger>(_ v: I) -> Value {
        var out: Value = []
        JSONWriter.appendDecimal(Int64(v), to: &out)
        return out
    }

    static func hex(_ v: UInt64, digits: Int) -> Value {
        let s = String(v, radix: 16)
        return string(String(repeating: "0", count: max(0, digits - s.count)) + s)
    }

    static func region(_ r: Region) -> Value {
        var f: [(String, Value?)] = [
            ("id", string(r.id)),
            ("enter_rssi", r.enterRSSI.map { number($0) }),
            ("exit_rssi", r.exitRSSI.map { number($0) }),
            ("exit_timeout_s", number(r.exitTimeout.seconds)),
            ("exit_dwell_s", number(r.exitDwell.seconds)),
        ]
        switch r.matcher {
        case .iBeacon(let uuid, let major, let minor):
            f += [
                ("uuid", string(uuid.description.lowercased())), ("major", major.map { int($0) }),
                ("minor", minor.map { int($0) }),
            ]
        case .eddystone(let high, let low, let instance):
            let namespace = hex(high, digits: 16).dropLast() + hex(UInt64(low), digits: 4).dropFirst()
            f += [("namespace", Array(namespace)), ("instance", instance.map { hex($0, digits: 12) })]
        case .altBeacon(let high, let middle, let low):
            f += [("altbeacon", string("\(high)-\(middle)-\(low)"))]
        case .address(let a):
            f += [("address", string(a.description))]
        case .namePrefix(let bytes):
            var s: Value = []
            JSONWriter.appendString(untrusted: bytes, to: &s)
            f += [("name_prefix", s)]
        }
        return object(f)
    }

    static func characteristic(_ c: PeripheralIntent.CharacteristicRef, _ extra: [(String, Value?)] = []) -> Value {
        object(
            [
                ("service", c.service.map { string($0.shortDescription) }),
                ("characteristic", string(c.characteristic.shortDescription)),
            ] + extra)
    }

    static func peripheral(_ p: PeripheralIntent) -> Value {
        var f: [(String, Value?)] = [
            ("name", p.name.map { string($0) }),
            ("address_type", p.addressType.map { string($0 == .public ? "public" : "random") }),
            (
                "subscribe",
                set(
                    p.subscribe.map {
                        characteristic(
                            $0.characteristic, [("indicate", $0.indicate.map { Array(($0 ? "true" : "false").utf8) })])
                    })
            ),
            (
                "read",
                set(p.read.map { characteristic($0.characteristic, [("interval_s", number($0.intervalSeconds))]) })
            ),
            ("writable", set(p.writable.map { characteristic($0) })),
        ]
        switch p.match {
        case .address(let a): f.append(("address", string(a.description)))
        case .namePrefix(let s): f.append(("name_prefix", string(s)))
        case .service(let u): f.append(("service", string(u.shortDescription)))
        }
        return object(f)
    }

    static func numbers<S>(_ section: S, _ table: [ConfigNumberKey<S>], digits: Int) -> Value {
        object(
            table.map { key in
                (key.name, key.whole ? int(Int(key.get(section))) : number(key.get(section), digits: digits))
            })
    }
}

extension CanonicalJSON {
    /// `homeassistant`: its keys, controls as a set (their order carries no meaning).
    static func homeAssistant(_ h: GatewayConfiguration.HomeAssistant) -> Value {
        let controls = h.controls.map { c -> Value in
            object([
                ("characteristic", string(c.characteristic.shortDescription)),
                ("service", c.service.map { string($0.shortDescription) }),
                ("entity", string(c.kind.rawValue)),
                ("press", c.kind == .button ? string(ConfigDigest.hex(c.press)) : nil),
                ("on", c.kind == .switch ? string(ConfigDigest.hex(c.on)) : nil),
                ("off", c.kind == .switch ? string(ConfigDigest.hex(c.off)) : nil),
                ("min", c.kind == .number ? int(c.min) : nil),
                ("max", c.kind == .number ? int(c.max) : nil),
            ])
        }
        return object([
            ("enabled", Array((h.enabled ? "true" : "false").utf8)),
            ("discovery_prefix", string(h.discoveryPrefix)),
            ("max_devices", int(h.maxDevices)),
            ("sensors", Array((h.sensors ? "true" : "false").utf8)),
            ("controls", set(controls)),
        ])
    }
}
