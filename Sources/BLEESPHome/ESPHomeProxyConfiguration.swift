/// What the proxy serves, from the gateway's `esphome_api:` section (docs/ESPHOME.md).
public struct ESPHomeProxyConfiguration: Sendable, Equatable {
    /// Where to listen; ESPHome's own port is 6053.
    public var host = "0.0.0.0"
    public var port = 6053
    /// The Noise pre-shared key (32 bytes); nil: plaintext framing, which the configuration check warns about.
    public var psk: [UInt8]?
    /// The device name Home Assistant matches (ESPHome's `name`), and the one it shows.
    public var name: String
    public var friendlyName: String
    /// Raw advertisements waiting for one client before new ones are dropped for it (and counted).
    public var clientBacklog = 4096
    /// ESPHome's keepalive: a ping after this much silence from the client, and the connection closed at 2.5 times it.
    public var keepaliveSeconds: Double = 60

    public init(name: String, friendlyName: String? = nil, psk: [UInt8]? = nil, port: Int = 6053) {
        self.name = name
        self.friendlyName = friendlyName ?? name
        self.psk = psk
        self.port = port
    }
}
