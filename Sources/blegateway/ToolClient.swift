import BLEGateway
import BLEPublishing

/// The MQTT configuration of the command-line tools that talk to the broker (watch, config push/get): a unique
/// client id per run, a short reconnect backoff, TLS when the URL says mqtts://.
func toolClientConfiguration(broker: String, role: String) throws -> MQTTConfiguration {
    let address = try BrokerAddress(parsing: broker)
    var c = MQTTConfiguration()
    c.host = address.host
    c.port = address.port
    c.clientID = "blegateway-\(role)-\(UInt32.random(in: 0...UInt32.max))"
    c.reconnect = .init(minDelay: .milliseconds(200), maxDelay: .seconds(2))
    if address.tls { c.tls = .init() }
    return c
}
