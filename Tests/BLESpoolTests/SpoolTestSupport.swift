import Foundation

@testable import BLESpool

/// A fresh directory under the system temp dir, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "blespool-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    var spoolPath: String { path + "/spool.db" }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

func sample(_ n: Int, topic: String = "gw/beacon/a", ts: Double = 1_700_000_000, run: String = "run-1") -> Reading {
    Reading(
        .sample, topic: topic, body: Array("rssi \(n)".utf8), qos: 0, ts: ts, clockSynchronized: true,
        expiry: 30, run: run)
}

func state(_ text: String, ts: Double = 1_700_000_000, run: String = "run-1") -> Reading {
    Reading(
        .state, topic: "gw/state", body: Array(text.utf8), qos: 1, retain: true, ts: ts,
        clockSynchronized: false, run: run)
}

extension Spool {
    /// Every durable reading, oldest first.
    func everything() throws -> [SpooledReading] { try pending(after: 0, limit: Int.max) }
}

extension SpooledReading {
    var text: String { String(decoding: reading.body, as: UTF8.self) }
}
