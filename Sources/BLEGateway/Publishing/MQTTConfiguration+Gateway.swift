import BLEConfiguration
import BLEPublishing

extension MQTTConfiguration {
    /// Room in the client's window for ownership claims (one per peripheral changing hands at once; a claim that
    /// finds the window full is made again by its state machine).
    static let claimsInFlight = 32

    /// The client's settings from the gateway's `mqtt:` section, with the retained offline status as its last will
    /// (`will`, on `topics.status`). Throws on a broker address that does not parse.
    init(gateway c: GatewayConfiguration, will: [UInt8], on topics: Topics) throws {
        let addresses = try BrokerAddress.list(c.mqtt.brokers)
        self.init()
        brokers = addresses.map { Broker(host: $0.host, port: $0.port) }
        failover = c.mqtt.failover == .random ? .random : .inOrder
        clientID = c.mqtt.clientID ?? "blegateway-\(c.gateway.id)"
        protocolVersion = c.mqtt.protocolVersion == 5 ? .v5 : .v311
        keepAlive = .seconds(c.mqtt.keepAliveSeconds)
        session = c.mqtt.sessionExpirySeconds > 0 ? .persistent(expiry: .seconds(c.mqtt.sessionExpirySeconds)) : .clean
        if addresses[0].tls || c.mqtt.tls.caFile != nil || c.mqtt.tls.certFile != nil {
            tls = .init(
                caFile: c.mqtt.tls.caFile, certificateFile: c.mqtt.tls.certFile, keyFile: c.mqtt.tls.keyFile,
                keyPassphraseFile: c.mqtt.tls.keyPassphraseFile, verifyHostname: c.mqtt.tls.verifyHostname)
        }
        if let user = c.mqtt.usernameFile {
            credentials = .init(usernameFile: user, passwordFile: c.mqtt.passwordFile)
        }
        self.will = .init(topic: topics.status, payload: will, qos: .atLeastOnce, retain: true)
        reconnect = .init(
            minDelay: .seconds(c.mqtt.reconnectMinSeconds), maxDelay: .seconds(c.mqtt.reconnectMaxSeconds))
        // The readings' window is the spool publisher's alone: discovery documents and ownership claims have room of
        // their own beside it, so a burst of either never makes a reading fail for a full window.
        maxInFlight = c.mqtt.inflight + DiscoveryOutbox.defaultQuota + Self.claimsInFlight
    }
}
