import Foundation
import Testing

@testable import BLEGateway
@testable import BLEPublishing
@testable import BLESpool

/// A spool file set aside while running shows on the health topic, in the schema's shape.
struct SpoolQuarantineHealthTests {
    @Test func aQuarantineIsPublishedInHealthAndMatchesTheSchema() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("spool.db").path
        let spool = try Spool(configuration: SpoolConfiguration(path: path))
        for n in 1...20 {
            spool.append(
                Reading(
                    .sample, topic: "bg/gw/beacons/a", body: Array("\(n)".utf8), qos: 0, ts: 1.7e9,
                    clockSynchronized: true, run: "0123abcd"))
        }
        try spool.commit()
        // Three I/O errors in a row (SQLITE_IOERR_WRITE): the file is set aside, its rows carried over.
        let ioError = SpoolError(.sqlite, path: path, context: "commit", sqlite: SQLiteResultCode(rawValue: 778))
        _ = spool.databaseLock.withLock { (1...3).map { _ in spool.quarantineIfNeeded(ioError) } }
        try spool.commit()

        let readings = GatewayReadings(
            topics: try Topics(prefix: "bg", gatewayID: "gw"), run: "0123abcd",
            version: "test", started: 0, sampleQoS: 1, sampleExpiry: nil)
        let health = GatewayReadings.Health(
            uptime: 1, spool: spool.statistics, publish: SpoolPublisher.Statistics(),
            publishRate: 0, reconnects: 0, reports: 0, malformedEvents: 0,
            trackedBeacons: 0, evictedBeacons: 0, residentBytes: 1)
        let reading = readings.health(health, ts: 1.7e9, synced: true)
        // As published: the envelope (run, seq, ts) around the body.
        let message = SpoolPublisher.message(for: SpooledReading(seq: 21, reading: reading), now: 1.7e9)
        let payload = String(decoding: message.payload, as: UTF8.self)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
        let spoolJSON = try #require(json["spool"] as? [String: Any])
        let quarantines = try #require(spoolJSON["quarantines"] as? [String: Any], "\(payload)")
        #expect(
            quarantines["count"] as? Int == 1 && quarantines["last_salvaged"] as? Int == 20
                && quarantines["last_lost"] as? Int == 0, "\(payload)")
        #expect((spoolJSON["set_aside"] as? [String: Any])?["files"] as? Int == 1, "\(payload)")
        let problems = try SchemaValidation.problems(
            [(topic: "bg/gw/health", payload: payload)], prefix: "bg",
            directory: dir)
        #expect(problems == nil, "\(problems ?? "")")
    }
}
