import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

/// The TLS mistakes a deployment makes, each against a real mosquitto with certificates the test makes: the client
/// does not connect, and its failure names the cause in words an operator can act on (libmosquitto alone says
/// "certificate verify failed" for all the certificate ones, and nothing at all for a TLS client on a plaintext
/// port, whose connection attempt then never ended).
@Suite(
    .enabled(
        if: TestDependency.runs(Mosquitto.isAvailable && TestCertificates.isAvailable), "needs mosquitto and openssl"),
    .timeLimit(.minutes(1)))
struct MQTTTLSRefusalTests {
    enum Mistake: String, CaseIterable, Sendable {
        case serverCertificateForAnotherHost, expiredServerCertificate, clientCertificateFromAnotherCA
        case plainMQTTToATLSPort, tlsToAPlaintextPort

        /// What the failure must say (besides libmosquitto's code).
        var named: [String] {
            switch self {
            case .serverCertificateForAnotherHost:
                ["the broker's certificate does not verify", "IP address mismatch", "X.509 error 64"]
            case .expiredServerCertificate:
                ["the broker's certificate does not verify", "certificate has expired", "X.509 error 10"]
            case .clientCertificateFromAnotherCA:
                ["the broker refused the client certificate", "unknown ca"]
            case .plainMQTTToATLSPort: ["speaks TLS: use mqtts://"]
            case .tlsToAPlaintextPort: ["does not answer a TLS handshake", "use mqtt://"]
            }
        }
    }

    @Test(arguments: Mistake.allCases)
    func eachTLSMistakeIsRefusedWithItsCauseNamed(_ mistake: Mistake) async throws {
        let broker = try Mosquitto()
        let pki = try TestCertificates(in: broker.directory)
        var tls: MQTTConfiguration.TLS?
        switch mistake {
        case .serverCertificateForAnotherHost:
            broker.tls = .init(
                caFile: pki.caFile, certificateFile: pki.wrongHostServerCertificate,
                keyFile: pki.serverKey)
            tls = .init(caFile: pki.caFile)
        case .expiredServerCertificate:
            broker.tls = .init(
                caFile: pki.caFile, certificateFile: pki.expiredServerCertificate, keyFile: pki.serverKey)
            tls = .init(caFile: pki.caFile)
        case .clientCertificateFromAnotherCA:
            broker.tls = .init(
                caFile: pki.caFile, certificateFile: pki.serverCertificate, keyFile: pki.serverKey,
                requireClientCertificate: true)
            tls = .init(
                caFile: pki.caFile, certificateFile: pki.untrustedClientCertificate,
                keyFile: pki.untrustedClientKey)
        case .plainMQTTToATLSPort:
            broker.tls = .init(caFile: pki.caFile, certificateFile: pki.serverCertificate, keyFile: pki.serverKey)
        case .tlsToAPlaintextPort:
            tls = .init(caFile: pki.caFile)
        }
        try broker.start()
        var configuration = testConfiguration(broker)
        configuration.tls = tls
        try await withRunningClient(configuration) { _, events in
            let failure = try #require(await events.waitFor { $0.failure != nil }.first?.failure)
            for words in mistake.named {
                #expect(failure.description.contains(words), "\(mistake): \(failure)")
            }
            #expect(await events.count { $0.isConnected } == 0)
        }
    }

    /// A listener that takes the TCP connection and never says a word: the TLS handshake is given up at
    /// `connectTimeout` (it used to wait for ever), and the failure says so.
    @Test func aTLSHandshakeNobodyAnswersIsGivenUpAtTheDeadline() async throws {
        let (listener, port) = try Loopback.silentListener()
        defer { close(listener) }
        var configuration = MQTTConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = port
        configuration.clientID = "silent-listener"
        configuration.tls = .init()
        configuration.connectTimeout = .seconds(1)
        try await withRunningClient(configuration) { _, events in
            let failure = try #require(await events.waitFor(limit: .seconds(30)) { $0.failure != nil }.first?.failure)
            #expect(
                failure.description.contains("no CONNACK within 1.0 seconds")
                    || failure.description.contains("no answer within 1.0 seconds"), "\(failure)")
            #expect(failure.description.contains("does not answer a TLS handshake"), "\(failure)")
        }
    }
}
