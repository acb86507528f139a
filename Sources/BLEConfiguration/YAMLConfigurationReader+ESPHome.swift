import Foundation
import Yams

/// `esphome_api:` (docs/ESPHOME.md): local only, like the broker's address; a remote document cannot open a port.
extension YAMLConfigurationReader {
    mutating func esphomeAPI(_ node: Node, _ path: String) throws -> GatewayConfiguration.ESPHomeAPI {
        var e = GatewayConfiguration.ESPHomeAPI()
        for (k, v) in try mapping(node, path) {
            let p = "\(path).\(k)"
            switch k {
            case "enabled": e.enabled = try bool(v, p)
            case "host": e.host = try string(v, p)
            case "port": e.port = try int(v, p, 0...65535)
            case "name":
                let name = try string(v, p)
                guard !name.isEmpty, name.utf8.count <= 63, !name.contains("\0") else {
                    throw fail(v, p, "a device name is 1 to 63 bytes, without a NUL")
                }
                e.name = name
            case "key":
                // ESPHome's `api: encryption: key:`: 32 random bytes, base64 (`openssl rand -base64 32`).
                let text = try string(v, p)
                guard let key = Data(base64Encoded: text), key.count == 32 else {
                    throw fail(v, p, "expected 32 bytes in base64 (as `openssl rand -base64 32` prints them)")
                }
                e.key = Array(key)
            default: unknown(v, p)
            }
        }
        if e.enabled, e.key == nil {
            warnings.append(
                fail(
                    node, path,
                    "no key: the API is served in plaintext, and anyone on the network can take the advertisements"))
        }
        return e
    }
}
