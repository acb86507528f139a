import BLETestSupport
import Foundation
import Testing

@testable import BLEGateway

extension EndToEndSuites {
    /// The whole gateway with its spool on a small file system that another file fills: states (here, verdicts on
    /// configuration documents) still reach the broker, each once; the samples removed to make room are counted in
    /// health; everything flows again when space returns.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .enabled(if: TestDependency.runs(Tmpfs.canMount), "needs permission to mount a tmpfs (root or CAP_SYS_ADMIN)"),
        .timeLimit(.minutes(2)), .serialized)
    struct DiskFullEndToEndTests {
        @Test func statesGetThroughAFullFileSystemOnceEachAndTheDroppedSamplesAreCounted() async throws {
            // Everything allowed; the beacons are denied later, so that samples wait in the spool (their family held
            // back) when the file system fills, and the states that need room remove some of them.
            let f = try Fixture(acl: { _ in "topic readwrite #\n" })
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
            let (runtime, _, task) = try f.start(c)
            defer { task.cancel() }
            try await EndToEndSuites.waitFor("readings") { observer.beacons(after: 0).count >= 10 }
            try f.setACL(
                "topic read #\ntopic write \(f.prefix)/\(f.gateway)/status\ntopic write \(f.prefix)/\(f.gateway)/health\n"
                    + "topic write \(f.prefix)/\(f.gateway)/config/state\ntopic write \(f.prefix)/\(f.gateway)/adapter\n"
                    + "topic write \(f.prefix)/\(f.gateway)/config\n")
            // Samples pile up in the spool, held back with their family, while the disk still has room.
            try await EndToEndSuites.waitFor("beacon samples held in the spool", limit: .seconds(20)) {
                runtime.publisherStatistics.refusedFamilies == ["\(f.prefix)/\(f.gateway)/beacons"]
                    && runtime.spoolStatistics.depth >= 20
            }

            // Another file takes every byte the file system has left (the spool keeps its reserve).
            let filler = disk + "/filler"
            _ = FileManager.default.createFile(atPath: filler, contents: nil)
            let handle = try #require(FileHandle(forWritingAtPath: filler))
            let chunk = Data(repeating: 0, count: 64 * 1024)
            while (try? handle.write(contentsOf: chunk)) != nil {}
            try? handle.close()

            for version in 2...4 {
                try await observer.publish(
                    f.configTopic, Array(#"{"version": \#(version), "log": {"level": "info"}}"#.utf8))
                try await EndToEndSuites.waitFor("verdict \(version)", limit: .seconds(20)) {
                    observer.states(f.stateTopic).contains { $0["version"] as? Int == version }
                }
            }
            // Each verdict once, under one seq (QoS 1 may repeat a message, never a seq with another reading).
            for version in 2...4 {
                let seqs = Set(
                    observer.states(f.stateTopic).filter { $0["version"] as? Int == version }
                        .compactMap { $0["seq"] as? Int })
                #expect(seqs.count == 1, "version \(version): \(seqs)")
            }
            func spoolHealth() -> [String: Any]? {
                observer.states("\(f.prefix)/\(f.gateway)/health").last?["spool"] as? [String: Any]
            }
            try await EndToEndSuites.waitFor("the reserve reported", limit: .seconds(20)) {
                (spoolHealth()?["reserve_releases"] as? Int ?? 0) >= 1
            }

            // Space returns and the beacons are allowed again: readings flow, and every seq that never arrived is a
            // counted drop.
            try FileManager.default.removeItem(atPath: filler)
            try f.setACL("topic readwrite #\n")
            let back = observer.seqs.max() ?? 0
            try await EndToEndSuites.waitFor("readings again", limit: .seconds(20)) {
                observer.beacons(after: back).count >= 10
            }
            try await EndToEndSuites.waitFor("health after recovery", limit: .seconds(20)) {
                (observer.states("\(f.prefix)/\(f.gateway)/health").last?["seq"] as? Int ?? 0) > back
            }
            // Both sides: every missing seq is a counted drop, and every drop of a sample that had a seq is a missing seq
            // (a sample dropped before it took one leaves no hole). States are never dropped.
            let health = try #require(spoolHealth())
            let missing = EndToEndSuites.gaps(observer.seqs)
            let removed =
                (health["dropped_samples"] as? Int ?? -1) - (health["dropped_before_seq"] as? Int ?? -1)
                + (health["downsampled_samples"] as? Int ?? -1)
            #expect(
                missing.count == removed,
                "\(missing.count) seqs never arrived, \(removed) removed with a seq: \(health)")
            #expect(removed > 0, "the full file system removed no sample: the test proved nothing")
            #expect(health["dropped_states"] as? Int == 0, "\(health)")
            task.cancel()
            _ = try? await task.value
        }
    }
}
