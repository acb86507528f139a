import Foundation

/// Whose access to the files `run` touches `ConfigurationPreflight` judges. `run` judges its own, with access(2).
/// `config check` is usually run with sudo (DEPLOY.md), and root may read and write everything, so access(2) as
/// root says nothing about the service's user: a key file only root could read passed the check and then stopped
/// the service at start. Run as root, the check judges the service's user instead, from each file's owner, group
/// and mode bits and from search permission on every directory above it.
public enum FileAccessJudge: Sendable, CustomStringConvertible {
    case thisProcess
    /// A user by its ids (its primary group and every supplementary one).
    case user(name: String, uid: uid_t, groups: [gid_t])

    /// The user the shipped units run the gateway as (deploy/systemd: `User=blegateway`).
    public static let serviceUserName = "blegateway"

    /// `name`'s ids from the user database, or nil when there is no such user.
    public static func user(named name: String) -> FileAccessJudge? {
        guard let pw = getpwnam(name) else { return nil }
        let uid = pw.pointee.pw_uid
        let primary = pw.pointee.pw_gid
        var count: Int32 = 32
        var groups = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(name, primary, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count) * 2)
            count = Int32(groups.count)
        }
        return .user(name: name, uid: uid, groups: Array(groups.prefix(Int(count))))
    }

    public struct Access: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let read = Access(rawValue: R_OK)
        public static let write = Access(rawValue: W_OK)
        /// Search, on a directory.
        public static let execute = Access(rawValue: X_OK)
    }

    /// Who is judged, for messages: "the gateway's user" (run judging itself) or "user blegateway".
    public var description: String {
        switch self {
        case .thisProcess: "the gateway's user"
        case .user(let name, _, _): "user \(name)"
        }
    }

    /// Whether the judged user may `access` the existing `path`. POSIX ACLs are not read (the shipped units do not
    /// use them); an ACL that grants more makes this say no where the service could.
    public func allows(_ path: String, _ access: Access) -> Bool {
        switch self {
        case .thisProcess:
            return Glibc.access(path, access.rawValue) == 0
        case .user(_, let uid, let groups):
            let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            // Every directory above it must be searchable.
            var directory = (absolute as NSString).deletingLastPathComponent
            var above: [String] = []
            while !directory.isEmpty {
                above.append(directory)
                if directory == "/" { break }
                directory = (directory as NSString).deletingLastPathComponent
            }
            for d in above where !Self.permits(d, .execute, uid: uid, groups: groups) { return false }
            return Self.permits(absolute, access, uid: uid, groups: groups)
        }
    }

    /// The owner's bits for the owner, the group's for a member, the others' for everyone else (the kernel's
    /// order: an owner denied by the owner bits is denied, whatever the group bits say); root passes.
    static func permits(_ path: String, _ access: Access, uid: uid_t, groups: [gid_t]) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        if uid == 0 { return true }
        let shift: UInt32 = st.st_uid == uid ? 6 : groups.contains(st.st_gid) ? 3 : 0
        let bits = (UInt32(st.st_mode) >> shift) & 0o7
        return bits & UInt32(access.rawValue) == UInt32(access.rawValue)
    }
}
