import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

@Suite struct RemoteConfigControllerTests {
    static func directory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("rc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    static func local() -> GatewayConfiguration {
        var c = GatewayConfiguration()
        c.gateway.id = "gw1"
        c.publishing.rangingIntervalSeconds = 5
        c.scan.filters = ["uuid:FEAA"]
        return c
    }

    @Test func theGatewayDocumentOverridesTheFleetKeyByKeyOverTheLocalFile() throws {
        let rc = RemoteConfigController(local: Self.local(), directory: nil)
        _ = rc.receive(.gateway, payload: Array(#"{"publishing": {"ranging_interval_s": 2}}"#.utf8))
        let o = rc.receive(
            .fleet, payload: Array(#"{"publishing": {"ranging_interval_s": 3, "health_interval_s": 9}}"#.utf8))
        #expect(o?.status == .applied)
        #expect(rc.effective.publishing.rangingIntervalSeconds == 2)  // gateway over fleet
        #expect(rc.effective.publishing.healthIntervalSeconds == 9)  // fleet over local
        #expect(rc.effective.scan.filters == ["uuid:FEAA"])  // local where nobody says otherwise
    }

    @Test func aRejectedDocumentLeavesThePreviousConfigurationInForce() throws {
        let rc = RemoteConfigController(local: Self.local(), directory: nil)
        _ = rc.receive(.gateway, payload: Array(#"{"version": 1, "log": {"level": "debug"}}"#.utf8))
        let before = rc.effective
        let o = rc.receive(.gateway, payload: Array(#"{"version": 2, "log": {"level": "loud"}}"#.utf8))
        #expect(o?.status == .rejected)
        #expect(o?.errors.first?.path == "$.log.level")
        #expect(rc.effective == before)
        #expect(rc.versions[.gateway] == 1)
    }

    @Test func aWindowOverTheIntervalAcrossLayersIsRejected() throws {
        let rc = RemoteConfigController(local: Self.local(), directory: nil)
        _ = rc.receive(.fleet, payload: Array(#"{"scan": {"interval_ms": 50, "window_ms": 50}}"#.utf8))
        let o = rc.receive(.gateway, payload: Array(#"{"scan": {"window_ms": 80}}"#.utf8))
        #expect(o?.status == .rejected)
        #expect(rc.effective.scan.windowMS == 50)
    }

    @Test func anEmptyPayloadFallsBackToTheLayersBelow() throws {
        let rc = RemoteConfigController(local: Self.local(), directory: nil)
        _ = rc.receive(.gateway, payload: Array(#"{"publishing": {"ranging_interval_s": 2}}"#.utf8))
        let o = rc.receive(.gateway, payload: [])
        #expect(o?.status == .cleared)
        #expect(rc.effective == Self.local())
    }

    @Test func theSameRetainedPayloadAgainIsNotReportedTwice() throws {
        let rc = RemoteConfigController(local: Self.local(), directory: nil)
        let doc = Array(#"{"log": {"level": "debug"}}"#.utf8)
        #expect(rc.receive(.gateway, payload: doc) != nil)
        #expect(rc.receive(.gateway, payload: doc) == nil)
    }

    @Test func acceptedLayersSurviveARestartAndADeletionIsRemembered() throws {
        let dir = try Self.directory()
        let first = RemoteConfigController(local: Self.local(), directory: dir)
        _ = first.receive(.fleet, payload: Array(#"{"version": 4, "log": {"level": "error"}}"#.utf8))
        _ = first.receive(.gateway, payload: Array(#"{"publishing": {"ranging_interval_s": 2}}"#.utf8))
        _ = first.receive(.gateway, payload: Array(#"{"publishing": {"ranging_interval_s": -2}}"#.utf8))  // rejected

        let second = RemoteConfigController(local: Self.local(), directory: dir)
        #expect(second.effective == first.effective)
        #expect(second.effective.log.level == "error" && second.effective.publishing.rangingIntervalSeconds == 2)
        #expect(second.versions[.fleet] == 4)

        _ = second.receive(.fleet, payload: [])
        let third = RemoteConfigController(local: Self.local(), directory: dir)
        #expect(third.effective.log.level == "info")
        #expect(third.effective.publishing.rangingIntervalSeconds == 2)
    }

    @Test func aDamagedStoredDocumentIsIgnoredAndRemoved() throws {
        let dir = try Self.directory()
        let path = "\(dir)/remote-config.gateway.json"
        try Data(String(repeating: "[", count: 100_000).utf8).write(to: URL(fileURLWithPath: path))
        let rc = RemoteConfigController(local: Self.local(), directory: dir)
        #expect(rc.effective == Self.local())
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func theLocalFileReadsTheLogAndRemoteConfigKeys() throws {
        var r = YAMLConfigurationReader()
        let c = try r.read(
            """
            log:
              level: debug
            remote_config:
              enabled: false
              startup_wait_s: 0.5
              public_key_file: /etc/blegateway/ops.pub
            """)
        #expect(r.warnings == [])
        #expect(c.log.level == "debug")
        #expect(!c.remoteConfig.enabled && c.remoteConfig.startupWaitSeconds == 0.5)
        #expect(c.remoteConfig.publicKeyFile == "/etc/blegateway/ops.pub")
        var bad = YAMLConfigurationReader()
        #expect(throws: ConfigurationError.self) { try bad.read("log:\n  level: loud\n") }
    }
}
