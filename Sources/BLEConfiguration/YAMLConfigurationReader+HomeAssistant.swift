import BLEHCI
import BLETransport
import Yams

/// `homeassistant:` (docs/CONFIG.md, "Home Assistant"): read here for the file and, through the same code, for
/// remote documents (RemoteConfigDocument).
extension YAMLConfigurationReader {
    mutating func homeAssistant(_ node: Node, _ path: String) throws -> GatewayConfiguration.HomeAssistant {
        var h = GatewayConfiguration.HomeAssistant()
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            switch k {
            case "enabled": h.enabled = try bool(v, p)
            case "discovery_prefix":
                let prefix = try string(v, p)
                if let why = GatewayConfiguration.HomeAssistant.problem(withPrefix: prefix) {
                    throw fail(v, p, "\"\(prefix)\" cannot be a discovery prefix: \(why)")
                }
                h.discoveryPrefix = prefix
            case "max_devices": h.maxDevices = try int(v, p, 1...10_000)
            case "sensors": h.sensors = try bool(v, p)
            case "controls":
                guard case .sequence(let seq) = v else { throw fail(v, p, "expected a list") }
                h.controls = try seq.enumerated().map { try control($0.element, "\(p)[\($0.offset)]") }
            default: unknown(v, p)
            }
        }
        return h
    }

    private mutating func control(_ node: Node, _ p: String) throws -> GatewayConfiguration.HomeAssistant.Control {
        var characteristic: BluetoothUUID?
        var service: BluetoothUUID?
        var kind: GatewayConfiguration.HomeAssistant.Control.Kind?
        var fields: [(String, Node)] = []
        for (k, v) in try mapping(node, p) {
            switch k {
            case "characteristic": characteristic = try uuid(v, "\(p).characteristic")
            case "service": service = try uuid(v, "\(p).service")
            case "entity":
                let names = GatewayConfiguration.HomeAssistant.Control.Kind.allCases.map(\.rawValue)
                kind = .init(rawValue: try oneOf(v, "\(p).entity", names))
            default: fields.append((k, v))
            }
        }
        guard let characteristic else { throw fail(node, p, "a characteristic UUID is required") }
        guard let kind else { throw fail(node, p, "entity is required: button, switch or number") }
        var c = GatewayConfiguration.HomeAssistant.Control(characteristic: characteristic, service: service, kind: kind)
        for (k, v) in fields {
            let kp = "\(p).\(k)"
            switch (kind, k) {
            case (.button, "press"): c.press = try hex(v, kp)
            case (.switch, "on"): c.on = try hex(v, kp)
            case (.switch, "off"): c.off = try hex(v, kp)
            case (.number, "min"): c.min = try int(v, kp, 0...65535)
            case (.number, "max"): c.max = try int(v, kp, 0...65535)
            default: unknown(v, kp)
            }
        }
        switch kind {
        case .button where c.press.isEmpty: throw fail(node, p, "a button needs press: the bytes to write (hex)")
        case .switch where c.on.isEmpty || c.off.isEmpty:
            throw fail(node, p, "a switch needs on and off: the bytes to write (hex)")
        case .number where c.min > c.max: throw fail(node, "\(p).min", "min (\(c.min)) is above max (\(c.max))")
        default: break
        }
        return c
    }

    /// Hex bytes as write commands carry them ("01", "0a0b").
    private func hex(_ node: Node, _ path: String) throws -> [UInt8] {
        let s = try string(node, path)
        guard let bytes = HexDigits.parseDigits(s), !bytes.isEmpty, bytes.count <= 512 else {
            throw fail(node, path, "expected bytes in hex (\"01\", \"0a0b\"), found \"\(s)\"")
        }
        return bytes
    }
}
