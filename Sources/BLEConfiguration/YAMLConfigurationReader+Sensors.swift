import BLEDomain
import BLEHCI
import BLETransport
import Foundation
import Yams

/// `sensors:` (docs/CONFIG.md, docs/SENSORS.md). Errors about a bindkey name its address and the length found,
/// never the key.
extension YAMLConfigurationReader {
    mutating func sensors(_ node: Node, _ path: String) throws -> GatewayConfiguration.Sensors {
        var s = GatewayConfiguration.Sensors()
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            switch k {
            case "enabled": s.enabled = try bool(v, p)
            case "min_interval_s": s.minIntervalSeconds = try double(v, p, 0...86400)
            case "repeat_window_s": s.repeatWindowSeconds = try double(v, p, 0...3600)
            case "bindkeys": s.bindkeys = try bindkeys(v, p)
            default: unknown(v, p)
            }
        }
        return s
    }

    /// `address: key`, the key 32 hex digits, or `file:<path>` naming a file that holds them (so the key can live
    /// in a file readable only by the gateway's user).
    mutating func bindkeys(_ node: Node, _ path: String) throws -> [BDAddress: [UInt8]] {
        var out: [BDAddress: [UInt8]] = [:]
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            guard let address = BDAddress(k) else {
                throw fail(v, p, "expected an address like AA:BB:CC:DD:EE:FF as the key, found \"\(k)\"")
            }
            var text = try string(v, p)
            if text.hasPrefix("file:") {
                let file = String(text.dropFirst(5))
                guard let contents = FileManager.default.contents(atPath: file) else {
                    throw fail(v, p, "cannot read the bindkey file \(file)")
                }
                text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard let key = HexDigits.parseDigits(text, count: 16) else {
                // The key is a secret: how long it is and what is wrong are said, never the text.
                let n = text.count
                let found = n == 32 ? "32 characters, not all of them hex digits (0-9, a-f)" : "\(n) characters"
                throw fail(v, p, "expected a bindkey of 32 hex digits, found \(found)")
            }
            out[address] = key
        }
        return out
    }
}
