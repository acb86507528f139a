import Foundation

/// What `run` touches on the file system before it scans — the spool's file and directory, the credential, TLS and
/// signing key files — checked by `config check` and by `run` alike, so a configuration that passes the check does
/// not then fail at start (it did: a directory as `spool.path` passed and `run` hit SQLite 14 SQLITE_CANTOPEN).
public enum ConfigurationPreflight {
    /// The file name the spool takes inside a directory given as `spool.path` or `--spool`.
    public static let spoolFileName = "spool.sqlite"

    /// Where systemd puts a unit's credentials (`LoadCredential=`) while, and only while, the unit runs.
    public static let systemdCredentials = "/run/credentials/"

    /// `c` with its paths resolved (a directory as `spool.path` holds `spool.sqlite`), or the first problem `run`
    /// would hit, naming the key; file access as `judge` has it.
    ///
    /// `beforeStart` is for a check made before the service starts (`config check`): a file under
    /// `/run/credentials/` that does not exist yet is handed to it (key, path) instead of refused, since systemd
    /// makes it when the service starts (DEPLOY.md's recipe points `mqtt.username_file` there). `run` gives none:
    /// by then the file must be there.
    public static func check(
        _ c: GatewayConfiguration, judge: FileAccessJudge = .thisProcess,
        beforeStart: ((_ key: String, _ path: String) -> Void)? = nil
    ) throws -> GatewayConfiguration {
        var c = c
        c.spool.path = try spoolFile(c.spool.path, judge: judge)
        let readable: [(String, String?)] = [
            ("mqtt.username_file", c.mqtt.usernameFile), ("mqtt.password_file", c.mqtt.passwordFile),
            ("mqtt.tls.ca_file", c.mqtt.tls.caFile), ("mqtt.tls.cert_file", c.mqtt.tls.certFile),
            ("mqtt.tls.key_file", c.mqtt.tls.keyFile), ("mqtt.tls.key_passphrase_file", c.mqtt.tls.keyPassphraseFile),
            ("remote_config.public_key_file", c.remoteConfig.publicKeyFile),
        ]
        for case (let key, let path?) in readable {
            if let beforeStart, path.hasPrefix(systemdCredentials), !FileManager.default.fileExists(atPath: path) {
                beforeStart(key, path)
                continue
            }
            try readableFile(path, key, judge: judge)
        }
        // Optional (enrolment makes it), but read at every start once it exists.
        if FileManager.default.fileExists(atPath: c.identityKeysFile) {
            try readableFile(c.identityKeysFile, "identity_keys_file", judge: judge)
        }
        // mosquitto_tls_set refuses a certificate without its key and a key without its certificate (MOSQ_ERR_INVAL).
        if (c.mqtt.tls.certFile == nil) != (c.mqtt.tls.keyFile == nil) {
            throw ConfigurationError(
                path: c.mqtt.tls.certFile == nil ? "mqtt.tls.cert_file" : "mqtt.tls.key_file",
                "a client certificate needs both mqtt.tls.cert_file and mqtt.tls.key_file")
        }
        // The key must parse as well as be readable: `run` refuses to start on a key it cannot use.
        _ = try ConfigSigning.Verifier.configured(by: c)
        return c
    }

    /// The spool's file for `path`: `path` itself, or `path/spool.sqlite` when `path` is a directory. Its directory
    /// is created at start, so the nearest ancestor that exists must be a directory the gateway may write in.
    public static func spoolFile(_ path: String, judge: FileAccessJudge = .thisProcess) throws -> String {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let file = exists && isDirectory.boolValue ? (path as NSString).appendingPathComponent(spoolFileName) : path
        if FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else {
                throw ConfigurationError(path: "spool.path", "\(file) is a directory; the spool is a file")
            }
            guard judge.allows(file, [.read, .write]) else {
                throw ConfigurationError(
                    path: "spool.path", "\(file): permission denied (\(judge) must be able to read and write it)")
            }
        }
        var ancestor = (file as NSString).deletingLastPathComponent
        if ancestor.isEmpty { ancestor = "." }
        while !FileManager.default.fileExists(atPath: ancestor, isDirectory: &isDirectory) {
            let up = (ancestor as NSString).deletingLastPathComponent
            if up.isEmpty || up == ancestor { break }
            ancestor = up
        }
        guard isDirectory.boolValue else {
            throw ConfigurationError(path: "spool.path", "\(ancestor) is not a directory, so \(file) cannot be made")
        }
        // SQLite's WAL and journal files sit beside the database: the directory itself must be writable.
        guard judge.allows(ancestor, [.write, .execute]) else {
            throw ConfigurationError(
                path: "spool.path", "\(ancestor): permission denied (\(judge) must be able to create files in it)")
        }
        return file
    }

    static func readableFile(_ path: String, _ key: String, judge: FileAccessJudge) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigurationError(path: key, "\(path): no such file")
        }
        guard !isDirectory.boolValue else { throw ConfigurationError(path: key, "\(path) is a directory, not a file") }
        guard judge.allows(path, .read) else {
            throw ConfigurationError(path: key, "\(path): permission denied (\(judge) needs read access)")
        }
    }
}
