import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

@Suite(
    .enabled(
        if: TestDependency.runs(Mosquitto.isAvailable && TestCertificates.isAvailable), "needs mosquitto and openssl"),
    .timeLimit(.minutes(1)))
struct MQTTTLSTests {
    /// Mutual TLS: the broker requires a client certificate; the client verifies the broker against the test CA
    /// (hostname verification on: the server certificate names 127.0.0.1) and unlocks its encrypted key with a
    /// passphrase read from a file.
    @Test func tlsWithTheRightCAAndAClientCertificateConnectsAndPublishes() async throws {
        let broker = try Mosquitto()
        let pki = try TestCertificates(in: broker.directory)
        broker.tls = .init(
            caFile: pki.caFile, certificateFile: pki.serverCertificate, keyFile: pki.serverKey,
            requireClientCertificate: true)
        try broker.start()
        var configuration = testConfiguration(broker)
        configuration.tls = .init(
            caFile: pki.caFile, certificateFile: pki.clientCertificate,
            keyFile: pki.clientKeyEncrypted, keyPassphraseFile: pki.clientKeyPassphraseFile)
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            let stream = try client.subscribe("tls/#")
            try await client.publish(MQTTMessage(topic: "tls/hello", payload: [7], qos: .atLeastOnce))
            #expect(await collect(stream, count: 1).map(\.payload) == [[7]])
        }
    }

    @Test func aBrokerCertificateFromAnUntrustedCAIsRefusedWithATLSError() async throws {
        let broker = try Mosquitto()
        let pki = try TestCertificates(in: broker.directory)
        broker.tls = .init(caFile: pki.caFile, certificateFile: pki.serverCertificate, keyFile: pki.serverKey)
        try broker.start()
        var configuration = testConfiguration(broker)
        configuration.tls = .init(caFile: pki.otherCAFile)
        try await withRunningClient(configuration) { client, events in
            let failure = try #require(await events.waitFor { $0.failure != nil }.first?.failure)
            #expect(failure.kind == .library)
            #expect(failure.code == 8, "MOSQ_ERR_TLS")
            #expect(failure.description.contains("certificate verify failed"), "\(failure)")
            #expect(await events.count { $0.isConnected } == 0)
        }
    }

    @Test func aMissingCAFileIsReportedAndRetriedWithBackoffWithoutConnecting() async throws {
        let broker = try startBroker()
        var configuration = testConfiguration(broker)
        configuration.tls = .init(caFile: broker.directory.appendingPathComponent("absent.pem").path)
        configuration.reconnect = .init(minDelay: .seconds(1), maxDelay: .seconds(4), jitter: 0)
        let clock = ManualClock()
        try await withRunningClient(configuration, clock: clock) { _, events in
            let failure = try #require(await events.waitFor { $0.failure != nil }.first?.failure)
            #expect(failure.kind == .library)
            #expect(failure.detail == "TLS files")
            await events.waitFor { $0.backoff != nil }
            await clock.untilSleeping()
            clock.advance(by: .seconds(1))
            await events.waitFor(2) { $0.failure != nil }
        }
    }
}

@Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs mosquitto"), .timeLimit(.minutes(1)))
struct MQTTCredentialTests {
    private func credentialFiles(_ broker: Mosquitto, password: String) throws -> MQTTConfiguration.Credentials {
        .init(
            usernameFile: try broker.writeFile("user", "gateway\n"),
            passwordFile: try broker.writeFile("password", password + "\n"))
    }

    @Test func theRightPasswordFromAFileConnects() async throws {
        let broker = try startBroker { try $0.requirePassword(user: "gateway", password: "s3cret") }
        var configuration = testConfiguration(broker)
        configuration.credentials = try credentialFiles(broker, password: "s3cret")
        try await withRunningClient(configuration) { client, events in
            await events.waitFor { $0.isConnected }
            try await client.publish(MQTTMessage(topic: "auth/ok", payload: [1], qos: .atLeastOnce))
        }
    }

    /// A wrong password is refused with the CONNACK's reason code and name (not a generic error), and the client backs off
    /// exponentially on its clock: with the clock stopped no further attempt happens, and each advance by the
    /// announced delay buys exactly one more attempt — never a tight loop.
    @Test func badCredentialsAreRefusedWithTheReasonCodeAndRetriedOnlyAfterBackoff() async throws {
        let broker = try startBroker { try $0.requirePassword(user: "gateway", password: "s3cret") }
        var configuration = testConfiguration(broker)
        configuration.credentials = try credentialFiles(broker, password: "wrong")
        configuration.reconnect = .init(minDelay: .seconds(1), maxDelay: .seconds(8), jitter: 0)
        let clock = ManualClock()
        try await withRunningClient(configuration, clock: clock) { client, events in
            var delays: [Duration] = []
            for attempt in 1...6 {
                let refusals = await events.waitFor(attempt) { $0.refusal != nil }
                let backoffs = await events.waitFor(attempt) { $0.backoff != nil }
                await clock.untilSleeping()
                // Asleep on the clock: the number of attempts cannot move until time does.
                #expect(await events.count { $0.isConnecting } == attempt)
                let refusal = try #require(refusals.last?.refusal)
                // mosquitto 2.0 answers a wrong password with 0x87 Not authorized rather than 0x86 (its
                // src/handle_connect.c sends MQTT_RC_NOT_AUTHORIZED when mosquitto_unpwd_check fails).
                #expect(refusal.code == 0x87)
                #expect(refusal.name == "Not authorized")
                #expect(refusal.isAuthenticationFailure)
                let delay = try #require(backoffs.last?.backoff)
                delays.append(delay)
                clock.advance(by: delay)
            }
            #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
            #expect(await events.count { $0.isConnected } == 0)
        }
    }

    @Test func anUnreadablePasswordFileStopsRunWithACredentialsError() async throws {
        var configuration = MQTTConfiguration()
        configuration.credentials = .init(usernameFile: "/nonexistent/user", passwordFile: "/nonexistent/password")
        let client = MQTTClient(configuration: configuration)
        do {
            try await client.run()
            Issue.record("run() should have thrown")
        } catch let error as MQTTError {
            #expect(error.kind == .credentials)
            #expect(error.detail == "/nonexistent/user")
        }
    }
}
