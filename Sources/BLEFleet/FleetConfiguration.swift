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

    public init(mqtt: MQTTConfiguration, brokerURL: String, prefix: String) {
        self.mqtt = mqtt
        self.brokerURL = brokerURL
        self.prefix = prefix
    }
}
