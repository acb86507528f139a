import BLEPublishing

/// The fleet service's settings (the `fleet:` section of a YAML file, or command-line options).
public struct FleetConfiguration: Sendable {
    /// How to reach the broker the gateways publish to; the service only subscribes.
    public var mqtt: MQTTConfiguration
    /// The broker as the operator wrote it, for the pages (never credentials).
    public var brokerURL: String
    /// The topic prefix the gateways publish under (`mqtt.prefix` in their configuration).
    public var prefix: String
    /// Address and port the dashboard listens on.
    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// SQLite file for the plots' history; nil keeps no history (plots start empty).
    public var historyPath: String?
    /// Beacons not reported by any gateway for this long leave the model.
    public var beaconTimeoutS = 300.0
    /// Received messages held while the model is busy. Gateways publish on the same second, so a fleet arrives in
    /// bursts: 1,000 gateways × 50 beacons is 50,000 messages at once. Beyond this the oldest are dropped, counted
    /// and shown (about 300 bytes each held).
    public var receiveBuffer = 131_072

    public init(mqtt: MQTTConfiguration, brokerURL: String, prefix: String) {
        self.mqtt = mqtt
        self.brokerURL = brokerURL
        self.prefix = prefix
    }
}
