import BLEGateway
import Foundation

/// The part of a gateway's retained `config/state` that says what it would refuse (schema/v1/config-state.json):
/// whether it applies only signed documents, and each layer's version floor.
struct ReportedConfigState {
    var signedOnly: Bool
    var floors: [String: (version: Int, sha256: String)]

    init?(_ payload: [UInt8]) {
        guard let json = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { return nil }
        signedOnly = json["signed_only"] as? Bool ?? false
        floors = [:]
        for (layer, value) in json["floors"] as? [String: Any] ?? [:] {
            guard let f = value as? [String: Any], let v = f["version"] as? Int, let d = f["sha256"] as? String else {
                continue
            }
            floors[layer] = (v, d)
        }
    }
}
