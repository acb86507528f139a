import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `config check` and `run` share `ConfigurationPreflight`: what `run` would hit at start is caught by the check.
@Suite struct ConfigurationPreflightTests {
    static func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "preflight-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aDirectoryAsSpoolPathHoldsSpoolSqliteAsTheFlagDoes() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = GatewayConfiguration()
        c.spool.path = dir
        #expect(try ConfigurationPreflight.check(c).spool.path == dir + "/spool.sqlite")
        // A file path that does not exist yet, under directories that do not either, is made at start: accepted.
        c.spool.path = dir + "/a/b/gw.sqlite"
        #expect(try ConfigurationPreflight.check(c).spool.path == dir + "/a/b/gw.sqlite")
    }

    @Test func aSpoolUnderARegularFileIsRefusedNamingTheKey() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        FileManager.default.createFile(atPath: dir + "/plain", contents: Data())
        var c = GatewayConfiguration()
        c.spool.path = dir + "/plain/spool.sqlite"
        #expect { try ConfigurationPreflight.check(c) } throws: { e in
            (e as? ConfigurationError)?.path == "spool.path"
        }
    }

    @Test func aMissingOrUnusableKeyFileIsRefusedNamingTheKey() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = GatewayConfiguration()
        c.spool.path = dir
        c.mqtt.tls.caFile = dir + "/missing-ca.pem"
        #expect { try ConfigurationPreflight.check(c) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.tls.ca_file"
        }
        c.mqtt.tls.caFile = nil
        FileManager.default.createFile(atPath: dir + "/ops.pub", contents: Data("not a key\n".utf8))
        c.remoteConfig.publicKeyFile = dir + "/ops.pub"
        #expect { try ConfigurationPreflight.check(c) } throws: { e in
            (e as? ConfigurationError)?.path == "remote_config.public_key_file"
        }
        FileManager.default.createFile(
            atPath: dir + "/ops.pub",
            contents: Data(ConfigSigning.generateKeyPair().publicKey.utf8))
        #expect(throws: Never.self) { try ConfigurationPreflight.check(c) }
    }

    @Test func aClientCertificateWithoutItsKeyIsRefused() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        FileManager.default.createFile(atPath: dir + "/client.pem", contents: Data("x".utf8))
        var c = GatewayConfiguration()
        c.spool.path = dir
        c.mqtt.tls.certFile = dir + "/client.pem"
        #expect { try ConfigurationPreflight.check(c) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.tls.key_file"
        }
    }
}
