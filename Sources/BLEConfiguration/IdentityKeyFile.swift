import BLEDomain
import BLETransport
import Foundation
import Yams

/// The identities `blegateway enrol` took by pairing: a YAML list in the format of `identity_keys:`
/// (`{name, irk, address}`), kept apart from the configuration file because the gateway writes it.
///
/// IRKs are secrets (anyone holding one can follow the phone through every address it takes): the file is written
/// with mode 0600, durably (`DurableFile`), and a file that others may read is refused at load, as ssh refuses a
/// private key others can read. Keys never appear in logs or errors; an entry is named by its name and address.
public enum IdentityKeyFile {
    public static let defaultPath = "/var/lib/blegateway/identities.yaml"

    /// One enrolled device.
    public struct Entry: Sendable, Hashable {
        public var name: String
        /// Most significant octet first.
        public var irk: [UInt8]
        public var address: BDAddress

        public init(name: String, irk: [UInt8], address: BDAddress) {
            self.name = name
            self.irk = irk
            self.address = address
        }
    }

    public enum Change: Sendable, Hashable {
        case added
        /// The same device (identity address or key) enrolled again: its entry was replaced, not duplicated.
        case updated(previousName: String)
    }

    public struct FileError: Error, CustomStringConvertible, Sendable {
        public var path: String
        public var message: String
        /// The file could not be reached (permission denied on it or its directory), as opposed to read and refused.
        public var unreachable = false
        public var description: String { "\(path): \(message)" }
    }

    /// The keys the configuration adds: none when the file does not exist (nothing enrolled yet).
    public static func load(_ path: String) throws -> [IdentityResolvingKey] {
        try entries(path).compactMap { IdentityResolvingKey(octets: $0.irk, identity: $0.address) }
    }

    /// The entries, names included (for `enrol` to update in place), read as `identity_keys` is: the same forms,
    /// the same checks, faults by position.
    public static func entries(_ path: String) throws -> [Entry] {
        guard let text = try readProtected(path) else { return [] }
        var reader = YAMLConfigurationReader()
        do {
            guard let root = try Yams.compose(yaml: text) else { return [] }
            return try reader.identityEntries(root, "identities").map {
                Entry(name: $0.name, irk: $0.key.octets, address: $0.key.identity)
            }
        } catch let e as ConfigurationError {
            throw FileError(path: path, message: "\(e)")
        } catch {
            throw FileError(path: path, message: "not YAML")
        }
    }

    /// Adds `entry`, or replaces the entry with the same identity address or the same key.
    @discardableResult
    public static func enrol(_ entry: Entry, at path: String) throws -> Change {
        var all = try entries(path)
        var change = Change.added
        if let i = all.firstIndex(where: { $0.address == entry.address || $0.irk == entry.irk }) {
            change = .updated(previousName: all[i].name)
            all[i] = entry
        } else {
            all.append(entry)
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        do {
            try DurableFile.replace(path, with: Array(render(all).utf8))
        } catch {
            throw FileError(path: path, message: "\(error)")
        }
        // `sudo blegateway enrol` writes as root; the gateway reads as the owner of its state directory
        // (/var/lib/blegateway, user blegateway): the file becomes that owner's, still 0600.
        var dir = stat()
        if geteuid() == 0, stat(directory.isEmpty ? "." : directory, &dir) == 0, dir.st_uid != 0 {
            guard chown(path, dir.st_uid, dir.st_gid) == 0 else {
                throw FileError(path: path, message: "chown to the directory's owner failed: errno \(errno)")
            }
        }
        return change
    }

    /// The file's text: a comment, then one flow mapping per device. The key is quoted: 32 hex digits can read as a
    /// number to YAML (all digits, or digits around one `e`).
    static func render(_ entries: [Entry]) -> String {
        var out = "# Identities enrolled by `blegateway enrol`: IRKs are secrets; keep this file mode 0600.\n"
        if entries.isEmpty { return out + "[]\n" }
        for e in entries {
            out += "- {name: \(quoted(e.name)), irk: \"\(HexDigits.string(e.irk))\", address: \"\(e.address)\"}\n"
        }
        return out
    }

    /// A YAML double-quoted scalar (YAML 1.2 §7.3.1): backslash and quote escaped, control characters as \u.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20 || u.value == 0x7F: out += String(format: "\\u%04X", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// The file's text, or nil when it does not exist; refused when group or others may read or write it.
    static func readProtected(_ path: String) throws -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT { return nil }
            throw FileError(path: path, message: "cannot read: \(String(cString: strerror(errno)))", unreachable: true)
        }
        if st.st_mode & 0o077 != 0 {
            let mode = String(st.st_mode & 0o777, radix: 8)
            throw FileError(
                path: path, message: "holds identity keys but others may read it (mode \(mode)); chmod 600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { throw FileError(path: path, message: "cannot read (or not UTF-8)") }
        return text
    }
}
