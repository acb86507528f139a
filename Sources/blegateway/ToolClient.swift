import ArgumentParser
import BLEConfiguration
import BLEGateway
import BLEPublishing
import Foundation

/// The MQTT configuration of the command-line tools that talk to the broker (watch, config push/get, fleet): a
/// unique client id per run, a short reconnect backoff, TLS when the URL says mqtts:// (with `tls`' files).
func toolClientConfiguration(broker: String, role: String, tls: ToolTLSOptions = ToolTLSOptions()) throws
    -> MQTTConfiguration
{
    // A cluster's nodes, comma-separated: the tool fails over between them as a gateway does (mqtt.brokers).
    let addresses = try BrokerAddress.list(broker.split(separator: ",").map { String($0) })
    let address = addresses[0]
    var c = MQTTConfiguration()
    c.brokers = addresses.map { .init(host: $0.host, port: $0.port) }
    c.clientID = "blegateway-\(role)-\(UInt32.random(in: 0...UInt32.max))"
    c.reconnect = .init(minDelay: .milliseconds(200), maxDelay: .seconds(2))
    if address.tls { c.tls = .init() }
    try tls.apply(to: &c, broker: broker)
    return c
}

/// The broker a tool talks to, with its user and TLS files: declared once for `watch`, `config push/get`, `site`
/// and `fleet`. (`run --broker` overrides the gateway's own `mqtt.broker` and is the gateway's, not a tool's.)
struct ToolBrokerOptions: ParsableArguments {
    static let localBroker = "mqtt://127.0.0.1:1883"

    @Option(
        help: """
            The broker: mqtt://HOST:PORT or mqtts://HOST:PORT (default \(Self.localBroker)); a cluster's nodes \
            comma-separated.
            """)
    var broker: String?

    @Option(
        name: .customLong("mqtt-protocol"),
        help: "The MQTT version: 5 (default) or 3 (3.1.1, for a broker that speaks only it, such as NATS).")
    var mqttProtocol: Int?

    @OptionGroup var credentials: ToolCredentialOptions

    @OptionGroup var tls: ToolTLSOptions

    /// The broker in force: the flag, else the one a configuration file names, else the local one.
    func url(file: String? = nil) -> String { broker ?? file ?? Self.localBroker }

    /// The tool's client configuration; the flags win over the files a configuration file names.
    func configuration(
        role: String, fileBroker: String? = nil, usernameFile: String? = nil, passwordFile: String? = nil,
        fileProtocol: Int? = nil
    ) throws -> MQTTConfiguration {
        var c = try toolClientConfiguration(broker: url(file: fileBroker), role: role, tls: tls)
        switch mqttProtocol ?? fileProtocol {
        case nil, 5: c.protocolVersion = .v5
        case 3, 4: c.protocolVersion = .v311
        case let other?: throw ValidationError("--mqtt-protocol: \(other) is not 3 (3.1.1) or 5")
        }
        try credentials.apply(to: &c, usernameFile: usernameFile, passwordFile: passwordFile)
        return c
    }
}

/// The tools' MQTT user, for a broker that lets no one in anonymously (the shipped ACL names one per role: the fleet
/// service logs in as `blegateway-fleet`, an operator's tools as `ops`; deploy/mosquitto/blegateway.acl). Files, not
/// values, so a password is never on a command line.
struct ToolCredentialOptions: ParsableArguments {
    @Option(help: "A file holding the MQTT user name (with --password-file).")
    var usernameFile: String?

    @Option(help: "A file holding the MQTT password.")
    var passwordFile: String?

    /// Flags win over the files a configuration file names.
    func apply(
        to c: inout MQTTConfiguration, usernameFile fileUser: String? = nil, passwordFile filePassword: String? = nil
    ) throws {
        let user = usernameFile ?? fileUser
        let password = passwordFile ?? filePassword
        guard let user else {
            if password != nil { throw ValidationError("--password-file needs --username-file") }
            return
        }
        c.credentials = .init(usernameFile: user, passwordFile: password)
    }
}

/// The TLS files of the tools, to join a broker that requires mutual TLS (docs/DEPLOY.md): checked before any
/// connection, so a wrong path or a missing half is said at once.
struct ToolTLSOptions: ParsableArguments {
    @Option(help: "PEM file of the CA that signed the broker's certificate (mqtts:// only; default: the system's).")
    var caFile: String?

    @Option(help: "PEM client certificate, for a broker that requires one (with --key-file).")
    var certFile: String?

    @Option(help: "PEM private key of --cert-file (unencrypted).")
    var keyFile: String?

    func apply(to c: inout MQTTConfiguration, broker: String) throws {
        let given = [("--ca-file", caFile), ("--cert-file", certFile), ("--key-file", keyFile)]
            .compactMap { name, path in path.map { (name, $0) } }
        guard let first = given.first else { return }
        guard c.tls != nil else {
            throw ValidationError("\(first.0) needs an mqtts:// broker; \(broker) is plain MQTT")
        }
        if (certFile == nil) != (keyFile == nil) { throw ValidationError("--cert-file and --key-file go together") }
        for (name, path) in given where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("\(name) \(path): no readable file there")
        }
        c.tls = .init(caFile: caFile, certificateFile: certFile, keyFile: keyFile)
    }
}
