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

    /// `sudo blegateway config check` judges the service's user, not root (who may read everything): a secret only
    /// its owner can read, or a spool directory others cannot search, is refused naming that user, whoever runs the
    /// check; the owner, and a member of a group the file is readable by, pass.
    @Test func accessIsJudgedForTheServiceUserByOwnerGroupAndModeBitsNotForWhoeverRunsTheCheck() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secret = dir + "/broker.secret"
        FileManager.default.createFile(atPath: secret, contents: Data("s\n".utf8))
        var st = stat()
        #expect(stat(secret, &st) == 0)
        let stranger = FileAccessJudge.user(name: "svc", uid: st.st_uid &+ 4242, groups: [st.st_gid &+ 4242])
        let member = FileAccessJudge.user(name: "member", uid: st.st_uid &+ 4243, groups: [st.st_gid])
        let owner = FileAccessJudge.user(name: "owner", uid: st.st_uid, groups: [])
        var c = GatewayConfiguration()
        c.spool.path = dir
        c.mqtt.usernameFile = secret
        // The scratch directory and its parents are searchable by anyone, the directory writable by its owner only.
        #expect(chmod(dir, 0o755) == 0)
        #expect(chmod(secret, 0o600) == 0)
        // The owner may do everything; the stranger's check stops first at the spool's directory.
        #expect(throws: Never.self) { try ConfigurationPreflight.check(c, judge: owner) }
        #expect { try ConfigurationPreflight.check(c, judge: stranger) } throws: { e in
            let e = e as? ConfigurationError
            return e?.path == "spool.path" && "\(e!)".contains("user svc must be able to create files in it")
        }
        // The spool's directory open to all: the next thing the stranger cannot do is read the owner-only secret.
        #expect(chmod(dir, 0o777) == 0)
        #expect { try ConfigurationPreflight.check(c, judge: stranger) } throws: { e in
            let e = e as? ConfigurationError
            return e?.path == "mqtt.username_file" && "\(e!)".contains("permission denied (user svc needs read access)")
        }
        #expect { try ConfigurationPreflight.check(c, judge: member) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.username_file"
        }
        // Readable by the file's group: its member passes, the stranger still does not.
        #expect(chmod(secret, 0o640) == 0)
        #expect(throws: Never.self) { try ConfigurationPreflight.check(c, judge: member) }
        #expect { try ConfigurationPreflight.check(c, judge: stranger) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.username_file"
        }
        // A directory above the file that the stranger cannot search hides a world-readable file from it.
        #expect(chmod(secret, 0o644) == 0)
        #expect(throws: Never.self) { try ConfigurationPreflight.check(c, judge: stranger) }
        let hidden = dir + "/private"
        try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: false)
        FileManager.default.createFile(atPath: hidden + "/ca.pem", contents: Data("x".utf8))
        #expect(chmod(hidden + "/ca.pem", 0o644) == 0)
        #expect(chmod(hidden, 0o700) == 0)
        c.mqtt.tls.caFile = hidden + "/ca.pem"
        #expect { try ConfigurationPreflight.check(c, judge: stranger) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.tls.ca_file"
        }
        #expect(throws: Never.self) { try ConfigurationPreflight.check(c, judge: owner) }
    }

    /// DEPLOY.md points `mqtt.username_file` at `/run/credentials/blegateway.service/…`, which systemd makes only
    /// while the service runs: the check before start names it and goes on, and `run` still refuses it missing.
    @Test func aSystemdCredentialPathIsNotedBeforeStartAndRequiredAtStart() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = GatewayConfiguration()
        c.spool.path = dir
        c.mqtt.usernameFile = "/run/credentials/blegateway.service/mqtt_username-\(UUID().uuidString)"
        var noted: [String] = []
        #expect(throws: Never.self) {
            try ConfigurationPreflight.check(c) { key, _ in noted.append(key) }
        }
        #expect(noted == ["mqtt.username_file"])
        #expect { try ConfigurationPreflight.check(c) } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.username_file"
        }
        // Anywhere else a missing file is refused before start too.
        c.mqtt.usernameFile = dir + "/missing"
        #expect { try ConfigurationPreflight.check(c) { _, _ in } } throws: { e in
            (e as? ConfigurationError)?.path == "mqtt.username_file"
        }
    }
}
