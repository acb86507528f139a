import Foundation

/// Secrets read from credential files (systemd `LoadCredential=`: `$CREDENTIALS_DIRECTORY/mqtt-password`), held
/// only as long as libmosquitto needs them and never printed: `description` is redacted.
struct MQTTSecrets: Sendable, CustomStringConvertible {
    var username: String?
    var password: String?
    var keyPassphrase: [UInt8]?

    var description: String { "MQTTSecrets(<redacted>)" }

    static func load(_ configuration: MQTTConfiguration) throws(MQTTError) -> MQTTSecrets {
        var secrets = MQTTSecrets()
        if let credentials = configuration.credentials {
            secrets.username = String(decoding: try read(credentials.usernameFile), as: UTF8.self)
            if let file = credentials.passwordFile {
                secrets.password = String(decoding: try read(file), as: UTF8.self)
            }
        }
        if let file = configuration.tls?.keyPassphraseFile { secrets.keyPassphrase = try read(file) }
        return secrets
    }

    /// The file's bytes without one trailing newline (what `echo secret > file` adds). MQTT passwords are binary
    /// (§3.1.3.6) but libmosquitto takes a C string, so a NUL byte is refused rather than silently truncated.
    static func read(_ path: String) throws(MQTTError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MQTTError(kind: .credentials, code: Int(errno), name: "cannot read credential file", detail: path)
        }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        if bytes.contains(0) {
            throw MQTTError(kind: .credentials, code: 0, name: "credential file contains a NUL byte", detail: path)
        }
        return bytes
    }
}
