import BLESpool
import BLETransport
import Foundation

/// `blegateway-bench spool [--count N] [--dir PATH]`: the spool's append rate with batched commits (both the
/// `run(clock:)` service committing every 100 ms beside a producer, and explicit commits), its replay read rate,
/// and the bytes it writes per reading. Durability FULL (an fsync per commit), as on a gateway.
func runSpoolBenchmark(arguments: [String]) async {
    var count = 1_000_000
    var directory = NSTemporaryDirectory()
    var i = 0
    while i < arguments.count {
        switch arguments[i] {
        case "--count" where i + 1 < arguments.count:
            count = Int(arguments[i + 1]) ?? count
            i += 1
        case "--dir" where i + 1 < arguments.count:
            directory = arguments[i + 1]
            i += 1
        default: break
        }
        i += 1
    }
    let base = directory + "/blespool-bench-\(getpid())"
    try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: base) }

    // A typical RSSI sample: a ~35-byte body, a ~65-byte per-beacon topic, a run id.
    let topics = (0..<50).map { String(format: "gw/00:11:22:33:44:55/beacon/fda50693-a4e2-4fb1-afcf-c6eb0764%04d", $0) }
    func reading(_ n: Int) -> Reading {
        let body = Array("{\"rssi\":-\(40 + n % 50),\"tx\":-59,\"d\":1.25}".utf8)
        return Reading(
            .sample, topic: topics[n % topics.count], body: body, qos: 0, ts: 1_700_000_000 + Double(n) / 1000,
            clockSynchronized: true, expiry: 60, run: "bench-run"
        )
    }
    // The buffer bound is raised so that a producer faster than the disk measures the drain, not the drops.
    let config = { (name: String) in
        SpoolConfiguration(path: "\(base)/\(name).db", maxBytes: 1 << 30, maxBufferedSamples: count)
    }

    print("spool benchmark: \(count) readings of \(reading(0).storedSize) charged bytes, synchronous=FULL, \(base)")

    // 1. The service commits every 100 ms while one producer appends as fast as it can.
    do {
        let spool = try Spool(configuration: config("service"))
        let io0 = ProcessIO.read()
        let start = ContinuousClock.now
        let service = Task { await spool.run(clock: SystemClock()) }
        for n in 0..<count { spool.append(reading(n)) }
        service.cancel()
        await service.value  // commits the rest
        let elapsed = (ContinuousClock.now - start).seconds
        let io1 = ProcessIO.read()
        let stats = spool.statistics
        print(
            String(
                format: "append+commit (service, 100 ms window): %.0f readings/s, %d commits, depth %d, "
                    + "dropped in memory %d", Double(count) / elapsed, stats.commits, stats.depth,
                stats.drops[.sample]?.droppedInMemory ?? 0))
        print(
            String(
                format: "  bytes per reading: %.1f to the block device (write_bytes), %.1f via write(2) (wchar), "
                    + "%.1f on disk (db+wal)", Double(io1.writeBytes - io0.writeBytes) / Double(count),
                Double(io1.wchar - io0.wchar) / Double(count), Double(stats.bytesOnDisk) / Double(count)))

        // 2. Replay: read the whole backlog oldest first in windows of 1000, as the publisher does.
        let replayStart = ContinuousClock.now
        var cursor: UInt64 = 0
        var replayed = 0
        while true {
            let batch = try spool.pending(after: cursor, limit: 1000)
            guard let last = batch.last else { break }
            replayed += batch.count
            cursor = last.seq
        }
        let replayElapsed = (ContinuousClock.now - replayStart).seconds
        print(String(format: "replay read: %.0f readings/s (%d readings)", Double(replayed) / replayElapsed, replayed))

        // 3. Acknowledge and delete everything, in commits of 20,000 acknowledgements.
        let ackStart = ContinuousClock.now
        var seq: UInt64 = 1
        while seq <= stats.lastSeq {
            let upper = min(seq + 19_999, stats.lastSeq)
            spool.acknowledge(seq...upper)
            try spool.commit()
            seq = upper + 1
        }
        let ackElapsed = (ContinuousClock.now - ackStart).seconds
        print(String(format: "acknowledge+delete: %.0f readings/s", Double(count) / ackElapsed))
    } catch {
        print("spool benchmark failed: \(error)")
    }

    // 4. The producer commits itself every 20,000 readings (100 ms at 200,000/s): no concurrency.
    do {
        let spool = try Spool(configuration: config("explicit"))
        let start = ContinuousClock.now
        for n in 0..<count {
            spool.append(reading(n))
            if n % 20_000 == 19_999 { try spool.commit() }
        }
        try spool.commit()
        let elapsed = (ContinuousClock.now - start).seconds
        print(String(format: "append+commit (explicit, 20,000 per commit): %.0f readings/s", Double(count) / elapsed))
    } catch {
        print("spool benchmark failed: \(error)")
    }

    // 5. Write amplification at gateway-like rates: 200 commits of a window's worth of readings each. Small commits
    //    rewrite the last leaf page, the meta page and the WAL frame headers every time: this is what an SD card sees.
    for perCommit in [10, 100, 1000, 10_000] {
        do {
            let spool = try Spool(configuration: config("window-\(perCommit)"))
            let io0 = ProcessIO.read()
            var n = 0
            for _ in 0..<200 {
                for _ in 0..<perCommit {
                    spool.append(reading(n))
                    n += 1
                }
                try spool.commit()
            }
            let io1 = ProcessIO.read()
            print(
                String(
                    format: "%6d readings per commit: %.1f bytes written per reading (%.0f per commit)",
                    perCommit, Double(io1.writeBytes - io0.writeBytes) / Double(n),
                    Double(io1.writeBytes - io0.writeBytes) / 200))
        } catch {
            print("spool benchmark failed: \(error)")
        }
    }
}

/// This process's I/O counters from /proc/self/io.
private struct ProcessIO {
    var writeBytes: Int = 0
    var wchar: Int = 0

    static func read() -> ProcessIO {
        var io = ProcessIO()
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return io }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let value = Int(parts[1]) else { continue }
            if parts[0] == "write_bytes" { io.writeBytes = value }
            if parts[0] == "wchar" { io.wchar = value }
        }
        return io
    }
}
