import BLEHCI
import BLETransport
import Foundation
import Yams

/// A scenario file that cannot be used, with where (1-based line and column, from Yams' marks).
public struct ScenarioError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var line: Int?
    public var column: Int?
    public var message: String

    public var description: String {
        if let line, let column { return "\(file):\(line):\(column): \(message)" }
        return "\(file): \(message)"
    }
}

/// Reads scenario YAML (docs/SIMULATOR.md describes every key) into a `Scenario`.
public enum ScenarioLoader {
    public static func load(path: String) throws -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ScenarioError(file: path, message: "cannot read the file")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    public static func parse(_ text: String, file: String = "<scenario>") throws -> Scenario {
        let root: Node
        do {
            guard let n = try Yams.compose(yaml: text) else {
                throw ScenarioError(file: file, message: "the file is empty")
            }
            root = n
        } catch let e as ScenarioError {
            throw e
        } catch let e as YamlError {
            throw yamlError(e, file: file)
        }
        var r = Reader(file: file)
        return try r.scenario(root)
    }

    static func yamlError(_ e: YamlError, file: String) -> ScenarioError {
        switch e {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _):
            let what = [context?.text, problem].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
            return ScenarioError(file: file, line: mark.line, column: mark.column, message: "YAML: \(what)")
        default:
            return ScenarioError(file: file, message: "YAML: \(e)")
        }
    }
}

/// Walks the YAML tree, checking types and keys, and reporting the first problem with its mark.
struct Reader {
    let file: String

    func fail(_ node: Node?, _ message: String) -> ScenarioError {
        ScenarioError(file: file, line: node?.mark?.line, column: node?.mark?.column, message: message)
    }

    func mapping(_ n: Node, _ what: String, allowed: Set<String>) throws -> Node.Mapping {
        guard case .mapping(let m) = n else { throw fail(n, "\(what) must be a mapping") }
        for (k, _) in m {
            guard let key = k.string, allowed.contains(key) else {
                throw fail(k, "unknown key '\(k.string ?? "?")' in \(what); expected one of \(allowed.sorted())")
            }
        }
        return m
    }

    func sequence(_ n: Node?, _ what: String) throws -> [Node] {
        guard let n else { return [] }
        guard case .sequence(let s) = n else { throw fail(n, "\(what) must be a list") }
        return Array(s)
    }

    func string(_ m: Node.Mapping, _ key: String, _ what: String) throws -> String? {
        guard let n = m[key] else { return nil }
        guard case .scalar(let s) = n else { throw fail(n, "\(what).\(key) must be text") }
        return s.string
    }

    func requireString(_ m: Node.Mapping, _ key: String, _ what: String, at n: Node) throws -> String {
        guard let s = try string(m, key, what) else { throw fail(n, "\(what) needs '\(key)'") }
        return s
    }

    func double(_ m: Node.Mapping, _ key: String, _ what: String) throws -> Double? {
        guard let n = m[key] else { return nil }
        guard let v = n.float ?? n.int.map(Double.init) else { throw fail(n, "\(what).\(key) must be a number") }
        return v
    }

    func int(_ m: Node.Mapping, _ key: String, _ what: String, range: ClosedRange<Int>) throws -> Int? {
        guard let n = m[key] else { return nil }
        guard let v = n.int, range.contains(v) else {
            throw fail(n, "\(what).\(key) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    func bool(_ m: Node.Mapping, _ key: String, _ what: String) throws -> Bool? {
        guard let n = m[key] else { return nil }
        guard let v = n.bool else { throw fail(n, "\(what).\(key) must be true or false") }
        return v
    }

    func vec(_ n: Node, _ what: String) throws -> Vec3 {
        let items = try sequence(n, what)
        let vs = items.compactMap { $0.float ?? $0.int.map(Double.init) }
        guard vs.count == items.count, vs.count == 2 || vs.count == 3 else {
            throw fail(n, "\(what) must be [x, y] or [x, y, z] in metres")
        }
        return Vec3(vs[0], vs[1], vs.count == 3 ? vs[2] : 0)
    }

    func address(_ m: Node.Mapping, _ what: String) throws -> BDAddress? {
        guard let s = try string(m, "address", what) else { return nil }
        guard let a = BDAddress(s) else { throw fail(m["address"], "\(what).address must look like AA:BB:CC:DD:EE:FF") }
        return a
    }

    mutating func scenario(_ root: Node) throws -> Scenario {
        let m = try mapping(
            root, "the scenario",
            allowed: [
                "name", "description", "duration_s", "truth_interval_s", "radio", "gateways", "beacons", "tags",
                "peripherals", "phones", "generate", "faults", "gateway_config", "site",
            ])
        var s = Scenario(name: try string(m, "name", "scenario") ?? "unnamed")
        s.duration = try double(m, "duration_s", "scenario")
        s.truthInterval = try double(m, "truth_interval_s", "scenario") ?? 1
        if let r = m["radio"] { s.radio = try radio(r) }
        for (i, g) in try sequence(m["gateways"], "gateways").enumerated() {
            s.gateways.append(try gateway(g, index: i))
        }
        guard !s.gateways.isEmpty else { throw fail(root, "a scenario needs at least one gateway") }
        var seenGateways = Set<String>()
        for (g, n) in zip(s.gateways, try sequence(m["gateways"], "gateways")) where !seenGateways.insert(g.id).inserted
        {
            throw fail(n, "gateway id '\(g.id)' is used twice")
        }
        var names = Set<String>()
        var addresses = Set<BDAddress>()
        func add(_ e: EmitterSpec, from n: Node) throws {
            guard names.insert(e.name).inserted else { throw fail(n, "emitter name '\(e.name)' is used twice") }
            guard addresses.insert(e.address).inserted else { throw fail(n, "address \(e.address) is used twice") }
            s.emitters.append(e)
        }
        for (key, role) in [
            ("beacons", EmitterSpec.Role.beacon), ("tags", .tag), ("peripherals", .peripheral), ("phones", .phone),
        ] {
            for n in try sequence(m[key], key) { try add(try emitter(n, role: role, index: s.emitters.count), from: n) }
        }
        for n in try sequence(m["generate"], "generate") {
            for e in try generate(n, startIndex: s.emitters.count) { try add(e, from: n) }
        }
        for n in try sequence(m["faults"], "faults") {
            let f = try fault(n)
            guard seenGateways.contains(f.gateway) else { throw fail(n, "fault names unknown gateway '\(f.gateway)'") }
            if let p = f.peripheral, !s.emitters.contains(where: { $0.name == p && $0.role == .peripheral }) {
                throw fail(n, "fault names unknown peripheral '\(p)'")
            }
            s.faults.append(f)
        }
        for (gw, links) in s.radio.linkOffsets {
            guard seenGateways.contains(gw) else { throw fail(m["radio"], "radio.links names unknown gateway '\(gw)'") }
            for e in links.keys where !names.contains(e) {
                throw fail(m["radio"], "radio.links names unknown emitter '\(e)'")
            }
        }
        if let gc = m["gateway_config"] { s.gatewayConfigYAML = try Yams.serialize(node: gc) }
        for (g, n) in zip(s.gateways, try sequence(m["gateways"], "gateways")) {
            let own = n.mapping?["gateway_config"]
            if let own, own.mapping == nil { throw fail(own, "gateway '\(g.id)'.gateway_config must be a mapping") }
            switch (m["gateway_config"], own) {
            case (nil, nil): continue
            case (let base?, nil): s.gatewayConfigYAMLByGateway[g.id] = try Yams.serialize(node: base)
            case (nil, let own?): s.gatewayConfigYAMLByGateway[g.id] = try Yams.serialize(node: own)
            case (let base?, let own?):
                s.gatewayConfigYAMLByGateway[g.id] = try Yams.serialize(node: Self.merge(own, over: base))
            }
        }
        if let site = m["site"] {
            s.siteYAML = try siteYAML(site, gateways: s.gateways, nodes: try sequence(m["gateways"], "gateways"))
        }
        return s
    }

    /// The scenario's `site:` (floors, rooms) with its gateways placed where the radio has them, in their `room`:
    /// one geometry for the simulated air and for the fleet service's presence (docs/PRESENCE.md). The fleet
    /// service checks the rooms; here only the shape the simulator adds to.
    func siteYAML(_ site: Node, gateways: [GatewaySpec], nodes: [Node]) throws -> String {
        guard var m = site.mapping else { throw fail(site, "site must be a mapping (floors, rooms, presence)") }
        if m["gateways"] != nil {
            throw fail(site, "site.gateways comes from the scenario's gateways (give each a 'room')")
        }
        var placed: [Node] = []
        for (g, n) in zip(gateways, nodes) {
            guard let room = n.mapping?["room"]?.string else { continue }
            func num(_ v: Double) -> Node { Node(String(v), Tag(.float)) }
            let position = Node.sequence(
                .init([num(g.position.x), num(g.position.y), num(g.position.z)], .implicit, .flow))
            placed.append(
                .mapping(
                    .init(
                        [(Node("id"), Node(g.id)), (Node("position"), position), (Node("room"), Node(room))], .implicit,
                        .flow)))
        }
        m["gateways"] = .sequence(.init(placed))
        return try Yams.serialize(node: .mapping(m))
    }

    /// `overlay` over `base`: mappings merge key by key, anything else (a list, a scalar) replaces.
    static func merge(_ overlay: Node, over base: Node) -> Node {
        guard let o = overlay.mapping, var b = base.mapping else { return overlay }
        for (k, v) in o { b[k] = b[k].map { merge(v, over: $0) } ?? v }
        return .mapping(b)
    }

    func radio(_ n: Node) throws -> RadioModel {
        let m = try mapping(
            n, "radio",
            allowed: ["path_loss_exponent", "shadowing_sigma_db", "loss_probability", "sensitivity_dbm", "links"])
        var r = RadioModel()
        r.pathLossExponent = try double(m, "path_loss_exponent", "radio") ?? r.pathLossExponent
        r.shadowingSigmaDB = try double(m, "shadowing_sigma_db", "radio") ?? r.shadowingSigmaDB
        r.lossProbability = try double(m, "loss_probability", "radio") ?? r.lossProbability
        r.sensitivityDBm = try double(m, "sensitivity_dbm", "radio") ?? r.sensitivityDBm
        guard (0...1).contains(r.lossProbability) else {
            throw fail(m["loss_probability"], "radio.loss_probability must be 0...1")
        }
        guard r.shadowingSigmaDB >= 0 else {
            throw fail(m["shadowing_sigma_db"], "radio.shadowing_sigma_db must be ≥ 0")
        }
        for l in try sequence(m["links"], "radio.links") {
            let lm = try mapping(l, "a radio link", allowed: ["gateway", "emitter", "offset_db"])
            let gw = try requireString(lm, "gateway", "radio.links[]", at: l)
            let em = try requireString(lm, "emitter", "radio.links[]", at: l)
            guard let off = try double(lm, "offset_db", "radio.links[]") else {
                throw fail(l, "a radio link needs 'offset_db'")
            }
            r.linkOffsets[gw, default: [:]][em] = off
        }
        return r
    }

    func gateway(_ n: Node, index: Int) throws -> GatewaySpec {
        let m = try mapping(
            n, "a gateway",
            allowed: ["id", "position", "address", "rx_offset_db", "max_connections", "gateway_config", "room"])
        let id = try requireString(m, "id", "a gateway", at: n)
        guard !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw fail(m["id"], "gateway id '\(id)' may use only letters, digits, '-' and '_' (it names a socket file)")
        }
        guard let p = m["position"] else { throw fail(n, "gateway '\(id)' needs 'position'") }
        // Public addresses in a locally-chosen block, distinct per gateway, unless the file names one.
        let addr = try address(m, "gateway") ?? BDAddress(rawValue: 0x00_1B_DC_F0_00_01 + UInt64(index))
        return GatewaySpec(
            id: id, position: try vec(p, "gateway '\(id)'.position"), address: addr,
            rxOffsetDB: try double(m, "rx_offset_db", "gateway") ?? 0,
            maxConnections: try int(m, "max_connections", "gateway '\(id)'", range: 1...64) ?? 4)
    }

    static let emitterKeys: Set<String> = [
        "name", "type", "uuid", "major", "minor", "measured_power", "namespace", "instance", "tx_power_0m", "url",
        "battery_mv", "temperature_c", "company", "id", "reference_rssi", "local_name", "service_uuids", "address",
        "address_type", "position", "waypoints", "speed_mps", "pause_s", "loop", "interval_ms", "rssi_at_1m",
        "scan_response_name", "notify_interval_ms", "flood", "request_connection_update", "security_request",
        "gatt_change_at_s", "humidity_pct", "battery_pct", "drift_c", "drift_period_s", "packet_interval_s", "bindkey",
        "button_every_packets",
        "irk", "rotate_s", "pairing", "pairs_when",
    ]
    /// Keys only `phones:` take.
    static let phoneKeys: Set<String> = ["irk", "rotate_s", "pairing", "pairs_when"]
    /// Keys that describe a connected peripheral's behaviour; only `peripherals:` take them.
    static let linkKeys: Set<String> = [
        "notify_interval_ms", "flood", "request_connection_update", "security_request", "gatt_change_at_s",
    ]

    /// A stable random static address (Vol 6, Part B, §1.3.2.1: the two top bits are 1) from a name.
    static func staticAddress(for name: String) -> BDAddress {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        return BDAddress(rawValue: (SimRandom.mix(h) & 0x3FFF_FFFF_FFFF) | 0xC000_0000_0000)
    }

    func emitter(_ n: Node, role: EmitterSpec.Role, index: Int) throws -> EmitterSpec {
        let m = try mapping(n, "a \(role.rawValue)", allowed: Self.emitterKeys)
        let what = role.rawValue
        let name = try string(m, "name", what) ?? "\(what)-\(index + 1)"
        let type = try string(m, "type", what) ?? (role == .peripheral || role == .phone ? "named" : "ibeacon")
        var rssi1m = try double(m, "rssi_at_1m", what)
        let emitterAddress = try address(m, what) ?? Self.staticAddress(for: name)
        let frame: BeaconFrame
        switch type {
        case "ibeacon":
            let uuidText = try requireString(m, "uuid", "iBeacon '\(name)'", at: n)
            guard let uuid = parseHex(uuidText, count: 16) else {
                throw fail(m["uuid"], "uuid must be 16 bytes of hex")
            }
            let power = try int(m, "measured_power", what, range: -127...20) ?? -59
            frame = .iBeacon(
                uuid: uuid, major: UInt16(try int(m, "major", what, range: 0...65535) ?? 0),
                minor: UInt16(try int(m, "minor", what, range: 0...65535) ?? 0), measuredPower: Int8(power))
            rssi1m = rssi1m ?? Double(power)
        case "eddystone-uid":
            guard let ns = parseHex(try requireString(m, "namespace", what, at: n), count: 10) else {
                throw fail(m["namespace"], "namespace must be 10 bytes of hex")
            }
            guard let inst = parseHex(try requireString(m, "instance", what, at: n), count: 6) else {
                throw fail(m["instance"], "instance must be 6 bytes of hex")
            }
            let tx = try int(m, "tx_power_0m", what, range: -100...20) ?? -18
            frame = .eddystoneUID(namespace: ns, instance: inst, txPowerAt0m: Int8(tx))
            rssi1m = rssi1m ?? Double(tx - 41)  // Eddystone: "add 41 dBm" between 0 m and 1 m
        case "eddystone-url":
            let tx = try int(m, "tx_power_0m", what, range: -100...20) ?? -18
            let url = try requireString(m, "url", what, at: n)
            guard BeaconFrame.encodeURL(url).count <= 18 else { throw fail(m["url"], "url too long for Eddystone-URL") }
            frame = .eddystoneURL(url: url, txPowerAt0m: Int8(tx))
            rssi1m = rssi1m ?? Double(tx - 41)
        case "eddystone-tlm":
            frame = .eddystoneTLM(
                batteryMillivolts: UInt16(try int(m, "battery_mv", what, range: 0...65535) ?? 3000),
                temperatureC: try double(m, "temperature_c", what) ?? 21.5)
        case "altbeacon":
            guard let id = parseHex(try requireString(m, "id", what, at: n), count: 20) else {
                throw fail(m["id"], "AltBeacon id must be 20 bytes of hex")
            }
            let ref = try int(m, "reference_rssi", what, range: -127...20) ?? -59
            frame = .altBeacon(
                company: UInt16(try int(m, "company", what, range: 0...65535) ?? 0x0118), id: id,
                referenceRSSI: Int8(ref), reserved: 0)
            rssi1m = rssi1m ?? Double(ref)
        case "named":
            var uuids: [UInt16] = []
            for u in try sequence(m["service_uuids"], "service_uuids") {
                guard let s = u.string, let v = UInt16(s, radix: 16) else {
                    throw fail(u, "service_uuids entries are 16-bit UUIDs in hex, e.g. \"181A\"")
                }
                uuids.append(v)
            }
            frame = .named(name: try string(m, "local_name", what) ?? name, serviceUUIDs: uuids)
        case _ where SimSensor.Format(rawValue: type) != nil:
            let period = try double(m, "drift_period_s", what) ?? 600
            let every = try double(m, "packet_interval_s", what) ?? 10
            guard period > 0, every > 0 else { throw fail(n, "drift_period_s and packet_interval_s must be > 0") }
            var bindkey: [UInt8]?
            if let text = try string(m, "bindkey", what) {
                guard type == SimSensor.Format.bthome.rawValue || type == SimSensor.Format.mibeacon.rawValue else {
                    throw fail(m["bindkey"], "\(what): only sensor-bthome and sensor-mibeacon encrypt (bindkey)")
                }
                guard let key = parseHex(text, count: 16) else {
                    throw fail(m["bindkey"], "\(what).bindkey must be 32 hex digits (the 128-bit key)")
                }
                bindkey = key
            }
            let presses = try double(m, "button_every_packets", what) ?? 0
            guard presses >= 0, presses == presses.rounded(), presses < Double(UInt32.max) else {
                throw fail(m["button_every_packets"], "\(what).button_every_packets must be a whole number ≥ 0")
            }
            if presses > 0, type != SimSensor.Format.bthome.rawValue {
                throw fail(m["button_every_packets"], "\(what): only sensor-bthome has a button (button_every_packets)")
            }
            frame = .sensor(
                SimSensor(
                    format: SimSensor.Format(rawValue: type)!, address: emitterAddress,
                    temperatureC: try double(m, "temperature_c", what) ?? 21.5,
                    humidityPercent: try double(m, "humidity_pct", what) ?? 45,
                    batteryPercent: try double(m, "battery_pct", what) ?? 90,
                    driftC: try double(m, "drift_c", what) ?? 1.5,
                    driftPeriodSeconds: period, packetIntervalSeconds: every, bindkey: bindkey,
                    buttonEveryPackets: UInt32(presses)))
        default:
            throw fail(
                m["type"],
                "unknown type '\(type)'; expected ibeacon, eddystone-uid, eddystone-url, eddystone-tlm, altbeacon, "
                    + "named, "
                    + SimSensor.Format.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let motion: Motion
        if let wp = m["waypoints"] {
            let pts = try sequence(wp, "waypoints").map { try vec($0, "a waypoint") }
            guard !pts.isEmpty else { throw fail(wp, "waypoints must not be empty") }
            let speed = try double(m, "speed_mps", what) ?? 1.2
            guard speed > 0 else { throw fail(m["speed_mps"], "speed_mps must be > 0") }
            motion = .path(
                pts, speed: speed, pause: try double(m, "pause_s", what) ?? 0, loop: try bool(m, "loop", what) ?? true)
        } else if let p = m["position"] {
            motion = .fixed(try vec(p, "\(what) '\(name)'.position"))
        } else {
            throw fail(n, "\(what) '\(name)' needs 'position' or 'waypoints'")
        }
        let intervalMs = try double(m, "interval_ms", what) ?? (role == .peripheral ? 500 : role == .phone ? 200 : 100)
        guard (20...10_240).contains(intervalMs) else {
            throw fail(m["interval_ms"], "interval_ms must be 20...10240 (Core v5.4, Vol 6, Part B, §4.4.2.2)")
        }
        var scanResponse: [UInt8]?
        let scanName = try string(m, "scan_response_name", what) ?? (role == .peripheral ? name : nil)
        if let scanName {
            let bytes = Array(scanName.utf8.prefix(29))
            scanResponse = [UInt8(1 + bytes.count), 0x09] + bytes
        }
        let addressType =
            try string(m, "address_type", what) ?? (role == .peripheral || role == .phone ? "public" : "random")
        guard addressType == "public" || addressType == "random" else {
            throw fail(m["address_type"], "address_type must be public or random")
        }
        var e = EmitterSpec(
            name: name, role: role, frame: frame, address: emitterAddress,
            addressType: addressType == "public" ? 0 : 1, motion: motion, interval: intervalMs / 1000,
            rssiAt1m: rssi1m ?? -59, scanResponse: scanResponse)
        if role == .peripheral {
            e.link = try link(m, name: name)
        } else if let k = m.keys.first(where: { Self.linkKeys.contains($0.string ?? "") }) {
            throw fail(k, "'\(k.string ?? "")' applies to peripherals only; '\(name)' is a \(what)")
        }
        if role == .phone {
            e.phone = try phone(m, name: name, identityType: e.addressType)
        } else if let k = m.keys.first(where: { Self.phoneKeys.contains($0.string ?? "") }) {
            throw fail(k, "'\(k.string ?? "")' applies to phones only; '\(name)' is a \(what)")
        }
        return e
    }
}
