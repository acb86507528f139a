import Foundation

/// A small file system that something can fill, for the disk-full tests: a tmpfs of a given size mounted on a
/// directory. Mounting needs root or CAP_SYS_ADMIN, which most unprivileged containers lack; `canMount` says so.
public enum Tmpfs {
    /// Whether this process may mount a tmpfs: tried once, on a throw-away directory.
    public static let canMount: Bool = {
        let dir = NSTemporaryDirectory() + "tmpfs-probe-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard mount(size: "64k", on: dir) else { return false }
        return unmount(dir)
    }()

    /// Mounts a tmpfs of `size` (mount's syntax: "64k", "8m") on `directory`; false when it cannot.
    @discardableResult
    public static func mount(size: String, on directory: String) -> Bool {
        (try? ToolRun.run("/usr/bin/env", ["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory]))?
            .status == 0
    }

    /// Unmounts it, lazily: a test that failed half-way may still hold a file open there.
    @discardableResult
    public static func unmount(_ directory: String) -> Bool {
        (try? ToolRun.run("/usr/bin/env", ["umount", "-l", directory]))?.status == 0
    }
}
