import Foundation

/// What a suite needs from outside the package (a broker, a Python venv, the shared captures). On a developer's
/// machine a missing one skips the suite with its reason; under CI (`CI=true`) it must fail instead, since a suite
/// that switched itself off proves nothing and nobody would notice. So under CI the suite runs, and its tests fail at
/// `require`, naming what is missing.
public enum TestDependency {
    public static var underCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// For `.enabled(if:)`: whether the suite runs. Present: yes; missing: only under CI, where it then fails.
    public static func runs(_ present: Bool) -> Bool { present || underCI }

    public struct Missing: Error, CustomStringConvertible {
        public var what: String
        public var description: String { "missing test dependency: \(what) (make test installs it)" }
    }

    /// Throws `Missing` when `present` is false: the test fails, naming `what`.
    public static func require(_ present: Bool, _ what: String) throws {
        guard present else { throw Missing(what: what) }
    }
}

/// Home Assistant Core in the venv `Tests/homeassistant/install-ha.sh` builds (make test runs it first).
public enum HomeAssistantVenv {
    public static let python = "/var/cache/blegateway-ha-venv/bin/python"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: python) }
}
