/// The ids Home Assistant knows a gateway's device by, shared by the gateway (which announces its device) and the
/// fleet service (which adds the gateway's area to the same device): part of the schema both read and write by, like
/// a topic, so a fleet of mixed versions agrees on them.
public enum HomeAssistantIDs {
    /// The gateway's device id, `blegateway_<id>`, with the id written so that no two gateway ids give one device id
    /// (nor one unique id): letters (in their case), digits and `-` as they are, `_` as `__` and `.` as `_D`. What
    /// follows the id in a unique id is `_` and a lower-case word or hex, never `_` or `D`, so it cannot be read as
    /// part of another id. `gw.a`, `gw_a`, `GW-A` and `gw-a` used to give one id, and so one entity for two gateways.
    public static func gatewayDevice(_ gatewayID: String) -> String {
        var out = "blegateway_"
        for c in gatewayID.unicodeScalars {
            switch c {
            case "_": out += "__"
            case ".": out += "_D"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
