import BLETestSupport
import Testing

@testable import BLEPublishing

/// A generator that always returns the same word, so jitter is predictable.
struct FixedRandom: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite struct MQTTBackoffTests {
    @Test func delaysDoubleFromMinimumUpToMaximumWithoutJitter() {
        var backoff = MQTTBackoff(.init(minDelay: .seconds(1), maxDelay: .seconds(10), jitter: 0))
        var random = FixedRandom(value: 0)
        let delays = (0..<6).map { _ in backoff.next(using: &random) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
    }

    @Test func jitterShortensADelayByAtMostItsFraction() {
        var backoff = MQTTBackoff(.init(minDelay: .seconds(4), maxDelay: .seconds(60), jitter: 0.25))
        var random = FixedRandom(value: .max)  // the largest fraction the generator can give
        let delay = backoff.next(using: &random)
        #expect(delay < .seconds(4))
        #expect(delay >= .seconds(3))
    }

    @Test func resetStartsAgainFromTheMinimum() {
        var backoff = MQTTBackoff(.init(minDelay: .milliseconds(100), maxDelay: .seconds(5), jitter: 0))
        var random = FixedRandom(value: 0)
        _ = backoff.next(using: &random)
        _ = backoff.next(using: &random)
        backoff.reset()
        #expect(backoff.next(using: &random) == .milliseconds(100))
    }
}

@Suite struct MQTTConfigurationTests {
    @Test func descriptionNamesCredentialFilesButNeverSecrets() {
        var configuration = MQTTConfiguration()
        configuration.credentials = .init(
            usernameFile: "/run/credentials/gw/mqtt-user",
            passwordFile: "/run/credentials/gw/mqtt-password")
        configuration.tls = .init(caFile: "/etc/ca.pem", keyPassphraseFile: "/run/credentials/gw/key-pass")
        let text = configuration.description
        #expect(text.contains("<redacted from /run/credentials/gw/mqtt-password>"))
        #expect(text.contains("passphrase=<redacted>"))
        #expect(!text.contains("key-pass"))
    }

    @Test func hostnameVerificationIsOnByDefault() {
        #expect(MQTTConfiguration.TLS().verifyHostname)
    }
}

@Suite struct MQTTErrorTests {
    @Test func libraryErrorsAreNamedBySymbolAndMosquittoStrerror() {
        let error = MQTTError.library(8)
        #expect(error.kind == .library)
        #expect(error.code == 8)
        #expect(error.name.hasPrefix("MOSQ_ERR_TLS ("))
        #expect(MQTTError.library(99).name.hasPrefix("MOSQ_ERR_99 ("))
        // A stalled network ends the connection at the keepalive; libmosquitto 2.0.11 calls that "Unknown error.".
        #expect(MQTTError.library(19).name.hasPrefix("MOSQ_ERR_KEEPALIVE (no packet from the broker within"))
    }

    @Test func connackCodesAreNamedPerProtocolVersion() {
        let v5 = MQTTError.refused(0x86, protocolVersion: .v5)
        #expect(v5.code == 134)
        #expect(v5.name.lowercased().contains("bad user name or password"))
        #expect(v5.isAuthenticationFailure)
        let v311 = MQTTError.refused(5, protocolVersion: .v311)
        #expect(v311.name.lowercased().contains("not authori"))
        #expect(v311.isAuthenticationFailure)
        // Server unavailable (3.1.1) and Server busy (5) are no credentials problem.
        #expect(!MQTTError.refused(3, protocolVersion: .v311).isAuthenticationFailure)
        #expect(!MQTTError.refused(0x89, protocolVersion: .v5).isAuthenticationFailure)
        #expect(MQTTError.refused(0x8C, protocolVersion: .v5).isAuthenticationFailure)
    }

    @Test func reasonAndReturnCodesPrintTheirNumberAndTheSpecificationsName() {
        #expect(MQTTConnectReturnCode(rawValue: 4).description == "4 Connection Refused, bad user name or password")
        #expect(MQTTConnectReturnCode(rawValue: 9).description == "9")
        #expect(MQTTReasonCode.badAuthenticationMethod.description == "0x8C Bad authentication method")
        #expect(MQTTReasonCode(rawValue: 0x80).isFailure && !MQTTReasonCode(rawValue: 0x10).isFailure)
    }

    @Test func disconnectCodesAtOrAbove0x80AreMQTT5ReasonCodes() {
        #expect(MQTTError.disconnect(0x8E, detail: nil).kind == .reasonCode)
        #expect(MQTTError.disconnect(7, detail: nil).kind == .library)
    }
}
