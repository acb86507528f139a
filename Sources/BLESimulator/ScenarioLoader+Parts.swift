import BLEHCI
import BLETransport
import Foundation
import Yams

/// The scenario reader's smaller parts: a phone's keys, a peripheral link, generated emitters and a fault.
extension Reader {
    /// A phone's keys (docs/SIMULATOR.md, "Phones"): its IRK, how often its address changes, how it pairs.
    func phone(_ m: Node.Mapping, name: String, identityType: UInt8) throws -> PhoneSpec {
        let what = "phone '\(name)'"
        guard let text = try string(m, "irk", what) else { throw fail(nil, "\(what) needs 'irk' (32 hex digits)") }
        guard let irk = parseHex(text, count: 16) else { throw fail(m["irk"], "\(what).irk must be 32 hex digits") }
        let rotation = try double(m, "rotate_s", what) ?? 60
        guard rotation >= 1 else { throw fail(m["rotate_s"], "\(what).rotate_s must be ≥ 1") }
        var pairing: PhoneSpec.Pairing? = .secureConnections
        if let p = try string(m, "pairing", what) {
            if p == "never" {
                pairing = nil
            } else {
                guard let v = PhoneSpec.Pairing(rawValue: p) else {
                    throw fail(
                        m["pairing"],
                        "\(what).pairing must be one of never, "
                            + PhoneSpec.Pairing.allCases.map(\.rawValue).joined(separator: ", "))
                }
                pairing = v
            }
        }
        var asked = false
        if let w = try string(m, "pairs_when", what) {
            guard w == "connected" || w == "asked" else {
                throw fail(m["pairs_when"], "\(what).pairs_when must be connected (Android, BlueZ) or asked (iOS)")
            }
            asked = w == "asked"
        }
        return PhoneSpec(
            irk: irk, identityType: identityType, rotation: rotation, pairing: pairing, waitsToBeAsked: asked)
    }

    /// The per-peripheral link keys (docs/SIMULATOR.md, "Connections and GATT").
    func link(_ m: Node.Mapping, name: String) throws -> PeripheralLinkSpec {
        let what = "peripheral '\(name)'"
        var l = PeripheralLinkSpec()
        if let ms = try int(m, "notify_interval_ms", what, range: 2...3_600_000) {
            l.notifyInterval = Double(ms) / 1000
        }
        l.flood = try bool(m, "flood", what) ?? false
        l.requestConnectionUpdate = try bool(m, "request_connection_update", what) ?? false
        l.securityRequest = try bool(m, "security_request", what) ?? false
        if let at = try double(m, "gatt_change_at_s", what) {
            guard at >= 0 else { throw fail(m["gatt_change_at_s"], "\(what).gatt_change_at_s must be ≥ 0") }
            l.gattChangeAt = at
        }
        return l
    }

    /// `generate:` entries make many beacons at once, placed uniformly in a box by a PRNG with a
    /// fixed seed, so the layout does not change with `--seed`.
    func generate(_ n: Node, startIndex: Int) throws -> [EmitterSpec] {
        let m = try mapping(
            n, "a generate entry",
            allowed: [
                "count", "prefix", "type", "uuid", "major", "measured_power", "interval_ms", "area_min", "area_max",
            ])
        guard let count = try int(m, "count", "generate", range: 1...1_000_000) else {
            throw fail(n, "generate needs 'count'")
        }
        let type = try string(m, "type", "generate") ?? "ibeacon"
        guard type == "ibeacon" else { throw fail(m["type"], "generate supports type ibeacon only") }
        guard let uuid = parseHex(try requireString(m, "uuid", "generate", at: n), count: 16) else {
            throw fail(m["uuid"], "uuid must be 16 bytes of hex")
        }
        guard let lo = m["area_min"], let hi = m["area_max"] else {
            throw fail(n, "generate needs area_min and area_max")
        }
        let (a, b) = (try vec(lo, "area_min"), try vec(hi, "area_max"))
        let prefix = try string(m, "prefix", "generate") ?? "gen"
        let baseMajor = try int(m, "major", "generate", range: 0...65535) ?? 1
        let power = try int(m, "measured_power", "generate", range: -127...20) ?? -59
        let intervalMs = try double(m, "interval_ms", "generate") ?? 1000
        guard (20...10_240).contains(intervalMs) else { throw fail(m["interval_ms"], "interval_ms must be 20...10240") }
        let rng = SimRandom(seed: 0x5CE7_A210)
        return (0..<count).map { i in
            let k = UInt64(startIndex + i)
            let p = Vec3(
                a.x + (b.x - a.x) * rng.uniform(RandomStream.placement, k, 0),
                a.y + (b.y - a.y) * rng.uniform(RandomStream.placement, k, 1),
                a.z + (b.z - a.z) * rng.uniform(RandomStream.placement, k, 2))
            let name = "\(prefix)-\(i + 1)"
            return EmitterSpec(
                name: name, role: .beacon,
                frame: .iBeacon(
                    uuid: uuid, major: UInt16(baseMajor + i / 65536), minor: UInt16(i % 65536),
                    measuredPower: Int8(power)),
                address: Self.staticAddress(for: name), addressType: 1, motion: .fixed(p), interval: intervalMs / 1000,
                rssiAt1m: Double(power), scanResponse: nil)
        }
    }

    func fault(_ n: Node) throws -> FaultSpec {
        let m = try mapping(
            n, "a fault", allowed: ["at_s", "gateway", "type", "duration_s", "hardware_code", "peripheral", "status"])
        guard let at = try double(m, "at_s", "fault") else { throw fail(n, "a fault needs 'at_s'") }
        let gw = try requireString(m, "gateway", "fault", at: n)
        let typeText = try requireString(m, "type", "fault", at: n)
        guard let kind = FaultSpec.Kind(rawValue: typeText) else {
            throw fail(
                m["type"], "unknown fault type '\(typeText)'; expected \(FaultSpec.Kind.allCases.map(\.rawValue))")
        }
        var f = FaultSpec(
            at: at, gateway: gw, kind: kind, duration: try double(m, "duration_s", "fault"),
            hardwareCode: UInt8(try int(m, "hardware_code", "fault", range: 0...255) ?? 0))
        if let p = try string(m, "peripheral", "fault") {
            guard kind == .gattSilence || kind == .peripheralOff else {
                throw fail(m["peripheral"], "fault.peripheral applies to gatt_silence and peripheral_off only")
            }
            f.peripheral = p
        } else if kind == .peripheralOff {
            throw fail(n, "a peripheral_off fault needs 'peripheral' (the peripheral's name)")
        }
        if let status = try int(m, "status", "fault", range: 1...255) {
            guard kind == .commandErrors else { throw fail(m["status"], "fault.status applies to command_errors only") }
            f.status = UInt8(status)
        }
        return f
    }
}
