import BLEHCI
import BLETransport
import Yams

/// `adapter:` (docs/CONFIG.md): which controller(s), how they are opened, and the recovery ladder's policy.
extension YAMLConfigurationReader {
    mutating func adapter(_ node: Node, _ path: String) throws -> GatewayConfiguration.Adapter {
        var a = GatewayConfiguration.Adapter()
        var second: Node?
        var modeNode: Node?
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            switch k {
            case "device": a.device = try device(v, p)
            case "mode":
                a.mode = AdapterMode(rawValue: try oneOf(v, p, AdapterMode.allCases.map(\.rawValue))) ?? a.mode
                modeNode = v
            case "address": a.address = try address(v, p)
            case "second_device":
                a.secondDevice = try device(v, p)
                second = v
            case "second_address": a.secondAddress = try address(v, p)
            case "handback_s": a.handbackSeconds = try double(v, p, 0...3600)
            case "silence_timeout_s": a.silenceTimeoutSeconds = try double(v, p, 1...86400)
            case "max_backoff_s": a.maxBackoffSeconds = try double(v, p, 1...3600)
            case "allow_rfkill_unblock": a.allowRfkillUnblock = try bool(v, p)
            case "allow_usb_reset": a.allowUSBReset = try bool(v, p)
            default: unknown(v, p)
            }
        }
        if let modeNode, let spec = try? DeviceSpec(parsing: a.device), let why = a.mode.refusal(for: spec) {
            throw fail(modeNode, "\(path).mode", why)
        }
        if let second, let device = a.secondDevice {
            // Two adapters are two controllers the gateway owns; a capture commands nothing, and in shared mode the
            // kernel decides which adapter connects.
            guard a.mode == .exclusive else {
                throw fail(second, "\(path).second_device", "a second adapter needs adapter.mode: exclusive")
            }
            for (d, key) in [(a.device, "device"), (device, "second_device")] where d.hasPrefix("file:") {
                throw fail(second, "\(path).\(key)", "a capture cannot be one of two adapters")
            }
            guard device != a.device else {
                throw fail(second, "\(path).second_device", "the second adapter must differ from adapter.device")
            }
        } else if a.secondAddress != nil {
            throw ConfigurationError(
                path: "\(path).second_address", line: node.mark?.line, column: node.mark?.column,
                "second_address binds the second adapter: set adapter.second_device too")
        }
        return a
    }

    /// A device spec (`hciN`, `unix:PATH` …), checked now rather than at the first open.
    private func device(_ v: Node, _ p: String) throws -> String {
        let s = try string(v, p)
        do { _ = try DeviceSpec(parsing: s) } catch let e as TransportError { throw fail(v, p, e.message) }
        return s
    }

    private func address(_ v: Node, _ p: String) throws -> String {
        let s = try string(v, p)
        guard let a = BDAddress(s) else {
            throw fail(v, p, "expected an address like AA:BB:CC:DD:EE:FF, found \"\(s)\"")
        }
        return a.description
    }
}
