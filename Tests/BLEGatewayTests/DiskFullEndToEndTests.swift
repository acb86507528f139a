import BLETestSupport
import Foundation
import Testing
@testable import BLEGateway

extension EndToEndSuites {
    /// The whole gateway with its spool on a small file system that another file fills: states (here, verdicts on
    /// configuration documents) still reach the broker, each once; the samples removed to make room are counted in
    /// health; everything flows again when space returns.
    @Suite(.enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
           .enabled(if: TestDependency.runs(Tmpfs.canMount), "needs permission to mount a tmpfs (root or CAP_SYS_ADMIN)"),
           .timeLimit(.minutes(2)), .serialized)
    struct DiskFullEndToEndTests {
        @Test func statesGetThroughAFullFileSystemOnceEachAndTheDroppedSamplesAreCounted() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let disk = f.directory.appendingPathComponent("disk").path
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            try #require(Tmpfs.mount(size: "8m", on: disk))
            defer { Tmpfs.unmount(disk) }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()
            c.spool.path = disk + "/spool.sqlite"
            c.publishing.healthIntervalSeconds = 1
            let (_, _, task) = try f.start(c)
            defer { task.cancel() }
            try await EndToEndSuites.waitFor("readings") { observer.beacons(after: 0).count >= 10 }

            // Another file takes every byte the file system has left (the spool keeps its reserve).
            let filler = disk + "/filler"
            _ = FileManager.default.createFile(atPath: filler, contents: nil)
            let handle = try #require(FileHandle(forWritingAtPath: filler))
            let chunk = Data(repeating: 0, count: 64 * 1024)
            while (try? handle.write(contentsOf: chunk)) != nil {}
            try? handle.close()
            let fullAt = observer.seqs.max() ?? 0

            for version in 2...4 {
                try await observer.publish(f.configTopic, Array(#"{"version": \#(version), "log": {"level": "info"}}"#.utf8))
                try await EndToEndSuites.waitFor("verdict \(version)", limit: .seconds(20)) {
                    observer.states(f.stateTopic).contains { $0["version"] as? Int == version }
                }
            }
            // Each verdict once, under one seq (QoS 1 may repeat a message, never a seq with another reading).
            for version in 2...4 {
                let seqs = Set(observer.states(f.stateTopic).filter { $0["version"] as? Int == version }
                    .compactMap { $0["seq"] as? Int })
                #expect(seqs.count == 1, "version \(version): \(seqs)")
            }
            func spoolHealth() -> [String: Any]? {
                observer.states("\(f.prefix)/\(f.gateway)/health").last?["spool"] as? [String: Any]
            }
            try await EndToEndSuites.waitFor("the reserve reported", limit: .seconds(20)) {
                (spoolHealth()?["reserve_releases"] as? Int ?? 0) >= 1
            }

            // Space returns: readings flow again, and every seq that never arrived is a counted drop.
            try FileManager.default.removeItem(atPath: filler)
            let back = observer.seqs.max() ?? 0
            try await EndToEndSuites.waitFor("readings again", limit: .seconds(20)) {
                observer.beacons(after: back).count >= 10
            }
            try await EndToEndSuites.waitFor("health after recovery", limit: .seconds(20)) {
                (observer.states("\(f.prefix)/\(f.gateway)/health").last?["seq"] as? Int ?? 0) > back
            }
            let missing = EndToEndSuites.gaps(observer.seqs).filter { $0 > fullAt }
            let dropped = (spoolHealth()?["dropped_samples"] as? Int ?? 0) + (spoolHealth()?["downsampled_samples"] as? Int ?? 0)
            #expect(missing.count <= dropped, "\(missing.count) seqs never arrived, \(dropped) counted as dropped")
            task.cancel()
            _ = try? await task.value
        }
    }
}
