import BLESpool
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEPublishing

@Suite(
    .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (apt-get install mosquitto)"),
    .timeLimit(.minutes(2)))
struct SpoolPublisherTests {
    func makeSpool() throws -> Spool {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pub-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var c = SpoolConfiguration(path: dir.appendingPathComponent("spool.sqlite").path)
        c.durability = .normal
        return try Spool(configuration: c)
    }

    func reading(_ i: Int, _ cls: ReadingClass = .sample) -> Reading {
        Reading(
            cls, topic: "pub/gw/health", body: Array(#"{"i":\#(i)}"#.utf8), qos: 1, ts: 1_700_000_000 + Double(i),
            clockSynchronized: true, run: "00c0ffee")
    }

    /// Runs client, publisher and the event bridge between them around `body`.
    func withPublisher(
        _ broker: Mosquitto, spool: Spool, window: Int = 16,
        refusalBackoff: Duration = .seconds(1), maxRefusalBackoff: Duration = .seconds(60),
        base: String? = nil, clock: any BLEClock = SystemClock(),
        _ body: @Sendable (MQTTClient, SpoolPublisher) async throws -> Void
    ) async throws {
        var configuration = testConfiguration(broker)
        configuration.maxInFlight = window
        let client = MQTTClient(configuration: configuration)
        let publisher = SpoolPublisher(
            spool: spool, client: client, window: window, clock: clock, base: base,
            refusalBackoff: refusalBackoff, maxRefusalBackoff: maxRefusalBackoff)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            group.addTask { for await e in client.events { publisher.clientEvent(e) } }
            // As the gateway wires them: each commit wakes the publisher (it waits for events, not a timer).
            group.addTask { await spool.run(clock: clock, committed: publisher.readingsAvailable) }
            group.addTask { await publisher.run() }
            try await body(client, publisher)
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    func seqs(_ messages: [MQTTMessage]) -> [Int] {
        messages.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any])?["seq"] as? Int
        }
    }

    @Test func everyDurableReadingArrivesInSeqOrderWithItsEnvelopeAndLeavesTheSpool() async throws {
        let broker = try startBroker()
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("pub/#", qos: .atLeastOnce)
        await observer.subscribed("pub/#")
        for i in 1...500 { _ = spool.append(reading(i)) }
        try await withPublisher(broker, spool: spool) { _, publisher in
            let messages = await collect(received, count: 500)
            #expect(seqs(messages) == Array(1...500))
            let first = try JSONSerialization.jsonObject(with: Data(messages[0].payload)) as? [String: Any]
            #expect(first?["run"] as? String == "00c0ffee")
            #expect(first?["ts"] as? Double == 1_700_000_001)
            #expect(first?["i"] as? Int == 1)
            try await waitUntil("an empty spool") { spool.statistics.depth == 0 }
            #expect(spool.statistics.depth == 0)
            #expect(publisher.statistics.acknowledged == 500)
        }
    }

    @Test func aBrokerRestartMidStreamLosesNothingAndReplaysFromTheOldestUnacknowledged() async throws {
        let broker = try startBroker()
        let spool = try makeSpool()
        try await withPublisher(broker, spool: spool, window: 8) { _, publisher in
            let observer = MQTTClient(configuration: testConfiguration(broker, id: "observer2"))
            let watch = Task { try await observer.run() }
            defer { watch.cancel() }
            let received = try observer.subscribe("pub/#", qos: .atLeastOnce)
            await observer.subscribed("pub/#")
            let heard = Locked<[MQTTMessage]>([])
            let collector = Task { for await m in received { heard.withLock { $0.append(m) } } }
            defer { collector.cancel() }
            for i in 1...300 { _ = spool.append(reading(i)) }
            try await waitUntil("the first readings through") {
                spool.statistics.depth == 0 && spool.statistics.buffered == 0 && !heard.withLock { $0.isEmpty }
            }
            // Freeze the broker so acknowledgements stop and the window fills, then kill it: the publishes in
            // flight can only fail, and must be replayed.
            broker.pause()
            for i in 301...400 { _ = spool.append(reading(i)) }
            try await waitUntil("a full window") { publisher.statistics.inFlight >= 8 }
            #expect(publisher.statistics.inFlight == 8)
            broker.kill()
            for i in 401...600 { _ = spool.append(reading(i)) }  // readings keep coming while the broker is away
            try await waitUntil("the publisher sees the broker gone") { !publisher.statistics.connected }
            try broker.start()
            try await waitUntil("an empty spool, nothing buffered", limit: .seconds(20)) {
                spool.statistics.depth == 0 && spool.statistics.buffered == 0
            }
            #expect(spool.statistics.depth == 0)
            #expect(publisher.statistics.replays > 0, "the restart interrupted publishes in flight")
            let got = Set(seqs(heard.withLock { $0 }))
            // The observer itself was disconnected by the restart, so it may miss messages published while it
            // was away; what it must never see is a reading published out of the spool's order or a seq beyond
            // those committed. The spool being empty proves every reading was acknowledged by the broker.
            #expect(got.isSubset(of: Set(1...600)))
        }
    }

    /// A state event is published when it is committed, not when some timer fires: the publisher's and the spool's
    /// clock never moves here, so once the publisher has gone idle after the first event, a wait on that clock (a
    /// poll, a batching delay) would hold the second until the test's limit and fail it. (Checked: with the idle
    /// wait turned into a 100 ms poll, the second never arrives.)
    @Test func aStateEventIsPublishedWithTheClockStoppedSoNoTimerStandsInItsWay() async throws {
        let broker = try startBroker()
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "observer3"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("pub/#", qos: .atLeastOnce)
        await observer.subscribed("pub/#")
        let stopped = ManualClock()
        try await withPublisher(broker, spool: spool, clock: stopped) { _, publisher in
            let first = try spool.appendDurably(reading(1, .state))
            publisher.readingsAvailable()
            #expect(seqs(await collect(received, count: 1)) == [Int(first)])
            // The publisher handed the first over and went idle long before the broker delivered it here.
            let second = try spool.appendDurably(reading(2, .state))
            publisher.readingsAvailable()
            #expect(seqs(await collect(received, count: 1)) == [Int(second)])
        }
    }

    @Test func expiryIsWhatRemainsWhenClocksAreTrustedAndWholeWhenNot() {
        var r = reading(0)
        r.expiry = 300
        r.ts = 1000
        let synced = SpoolPublisher.message(for: SpooledReading(seq: 1, reading: r), now: 1100)
        #expect(synced.messageExpiryInterval == 200)
        r.clockSynchronized = false
        let unsynced = SpoolPublisher.message(for: SpooledReading(seq: 1, reading: r), now: 1100)
        #expect(unsynced.messageExpiryInterval == 300)
        // Past its expiry when its turn comes: not sent with a second to live, but counted and removed — and only
        // when the clock can be trusted.
        r.clockSynchronized = true
        #expect(SpoolPublisher.hasExpired(SpooledReading(seq: 1, reading: r), now: 5000))
        #expect(!SpoolPublisher.hasExpired(SpooledReading(seq: 1, reading: r), now: 1100))
        r.clockSynchronized = false
        #expect(!SpoolPublisher.hasExpired(SpooledReading(seq: 1, reading: r), now: 5000))
    }

    /// A backlog replayed after an outage: the samples whose expiry passed meanwhile are counted as expired and
    /// leave the spool; the rest arrive.
    @Test func expiredSamplesInABacklogAreCountedNotSent() async throws {
        let broker = try startBroker()
        let spool = try makeSpool()
        let now = Date().timeIntervalSince1970
        for i in 1...10 {
            var r = reading(i)
            r.ts = i <= 4 ? now - 1000 : now  // four of them older than their 300 s
            r.expiry = 300
            _ = try spool.appendDurably(r)
        }
        try await withPublisher(broker, spool: spool) { _, publisher in
            try await waitUntil("an empty spool") { spool.statistics.depth == 0 }
            let s = publisher.statistics
            #expect(s.expired == 4 && s.acknowledged == 6 && spool.statistics.depth == 0, "\(s)")
        }
    }

    /// An operator's ACL mistake, fixed with a reload: under MQTT 5 mosquitto answers the denied publishes with
    /// PUBACK 0x87 Not authorized. Nothing is lost: the readings stay in the spool, the refusal is counted and
    /// named while it lasts, and once the ACL allows them every seq arrives, none dropped as rejected.
    @Test func publishesDeniedByAnACLForAWhileAllArriveOnceItAllows() async throws {
        var aclPath = ""
        let broker = try startBroker { b in
            aclPath = try b.writeFile("acl", "topic read #\n")  // anonymous clients may read, not write
            b.extraConfiguration = ["acl_file \(aclPath)"]
        }
        let acl = aclPath
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "acl-observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("pub/#", qos: .atLeastOnce)
        // Subscribed before the publisher starts: what is published earlier is no one's to receive.
        await observer.subscribed("pub/#")
        for i in 1...20 { _ = try spool.appendDurably(reading(i, .state)) }
        try await withPublisher(
            broker, spool: spool, window: 8, refusalBackoff: .milliseconds(100),
            maxRefusalBackoff: .milliseconds(400)
        ) { _, publisher in
            try await waitUntil("three refusals") { publisher.statistics.refused >= 3 }
            let refusing = publisher.statistics
            #expect(refusing.refused >= 3, "the broker never refused")
            #expect(refusing.refusal?.reason == .notAuthorized, "\(String(describing: refusing.refusal))")
            #expect(refusing.acknowledged == 0 && refusing.rejected == 0)
            #expect(spool.statistics.depth == 20, "every refused reading is still in the spool")
            // The operator fixes the ACL and reloads the broker.
            try "topic readwrite #\n".write(toFile: acl, atomically: true, encoding: .utf8)
            broker.reload()
            // At least once, each seq: a publish in flight when the ACL changed may overtake the oldest, refused
            // one, which is sent again after its backoff (consumers order by seq).
            // Bounded, so a seq that never comes fails with what is missing instead of holding the suite.
            let arrived = Locked<Set<Int>>([])
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await m in received {
                        guard let seq = seqs([m]).first else { continue }
                        if arrived.withLock({ $0.insert(seq).inserted && $0.count == 20 }) { break }
                    }
                }
                group.addTask { try? await Task.sleep(for: .seconds(30)) }
                await group.next()
                group.cancelAll()
            }
            let got = arrived.withLock { $0 }
            #expect(got == Set(1...20), "missing: \(Set(1...20).subtracting(got).sorted())")
            try await waitUntil("an empty spool") { spool.statistics.depth == 0 }
            let s = publisher.statistics
            #expect(spool.statistics.depth == 0 && s.acknowledged == 20 && s.rejected == 0)
            #expect(s.refusal == nil, "the refusal ended with the first acknowledgement")
        }
    }
    /// The shipped ACL once denied Home Assistant's discovery topic, and the whole gateway stalled behind the first
    /// refused document: no health, no reading reached the broker. A refusal holds back its own family only: with the
    /// beacons denied, every health report behind them arrives, in order, while the beacons wait in the spool; once
    /// the ACL allows them, they follow and the hold ends.
    @Test func aDeniedTopicFamilyWaitsInTheSpoolWhileEveryOtherFamilyFlows() async throws {
        var aclPath = ""
        let broker = try startBroker { b in
            aclPath = try b.writeFile("acl", "topic read #\ntopic write pub/gw/health\n")
            b.extraConfiguration = ["acl_file \(aclPath)"]
        }
        let acl = aclPath
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "family-observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("pub/#", qos: .atLeastOnce)
        // Subscribed before the publisher starts: what is published earlier is no one's to receive.
        await observer.subscribed("pub/#")
        var beacons: Set<Int> = []
        var health: [Int] = []
        for i in 1...60 {
            let topic = i % 3 == 0 ? "pub/gw/beacons/b\(i % 2)" : "pub/gw/health"
            let seq = Int(
                try spool.appendDurably(
                    Reading(
                        .state, topic: topic, body: Array(#"{"i":\#(i)}"#.utf8), qos: 1, ts: 1_700_000_000,
                        clockSynchronized: true, run: "00c0ffee")))
            if i % 3 == 0 { beacons.insert(seq) } else { health.append(seq) }
        }
        let (denied, allowed) = (beacons, health)
        try await withPublisher(
            broker, spool: spool, window: 8, refusalBackoff: .milliseconds(100),
            maxRefusalBackoff: .milliseconds(400), base: "pub/gw"
        ) { _, publisher in
            var arrived: [Int] = []
            for await m in received {
                #expect(m.topic == "pub/gw/health", "a denied beacon was delivered: \(m.topic)")
                if let seq = seqs([m]).first, !arrived.contains(seq) { arrived.append(seq) }
                if arrived.count == allowed.count { break }
            }
            #expect(arrived == allowed, "every health report arrives, in seq order, past the refused beacons")
            let held = publisher.statistics
            #expect(held.refusedFamilies == ["pub/gw/beacons"])
            #expect(held.refusal?.reason == .notAuthorized)
            #expect(held.rejected == 0)
            #expect(
                await eventually { spool.statistics.depth == denied.count },
                "the refused beacons wait in the spool, none lost: \(spool.statistics.depth)")
            // The operator fixes the ACL: the beacons follow and the hold ends.
            try "topic readwrite #\n".write(toFile: acl, atomically: true, encoding: .utf8)
            broker.reload()
            var late: Set<Int> = []
            for await m in received {
                if m.topic.hasPrefix("pub/gw/beacons/"), let seq = seqs([m]).first { late.insert(seq) }
                if late == denied { break }
            }
            #expect(late == denied)
            #expect(await eventually { spool.statistics.depth == 0 && publisher.statistics.refusal == nil })
            let after = publisher.statistics
            #expect(spool.statistics.depth == 0 && after.refusal == nil && after.refusedFamilies.isEmpty)
        }
    }
}

@Suite(
    .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (apt-get install mosquitto)"),
    .timeLimit(.minutes(1)))
struct OversizedPayloadTests {
    /// A broker with a message size limit refuses a reading that exceeds it. The publisher must neither wedge on
    /// it (replaying it for ever) nor lose it silently: it is counted as rejected and the readings behind it flow.
    @Test func aReadingOverTheBrokersLimitIsCountedAsRejectedAndTheRestFlow() async throws {
        let broker = try startBroker { $0.extraConfiguration = ["message_size_limit 512"] }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("oversize-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var sc = SpoolConfiguration(path: dir.appendingPathComponent("spool.sqlite").path)
        sc.durability = .normal
        let spool = try Spool(configuration: sc)
        func reading(_ body: String) -> Reading {
            Reading(
                .state, topic: "big/gw/status", body: Array(body.utf8), qos: 1, ts: 1.7e9, clockSynchronized: true,
                run: "00c0ffee")
        }
        _ = try spool.appendDurably(reading(#"{"n":1}"#))
        _ = try spool.appendDurably(reading(#"{"blob":""# + String(repeating: "x", count: 4096) + #""}"#))
        _ = try spool.appendDurably(reading(#"{"n":3}"#))
        let client = MQTTClient(configuration: testConfiguration(broker))
        let publisher = SpoolPublisher(spool: spool, client: client, window: 8, clock: SystemClock())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            group.addTask { for await e in client.events { publisher.clientEvent(e) } }
            // As the gateway wires them: each commit wakes the publisher (it waits for events, not a timer).
            group.addTask { await spool.run(clock: SystemClock(), committed: publisher.readingsAvailable) }
            group.addTask { await publisher.run() }
            try await waitUntil("three answered") {
                publisher.statistics.acknowledged + publisher.statistics.rejected >= 3
            }
            let s = publisher.statistics
            #expect(s.acknowledged == 2, "the readings before and after the oversized one are delivered")
            #expect(s.rejected == 1, "the oversized one is counted as refused by the broker")
            group.cancelAll()
        }
    }

    /// Notices are rare, but a publisher nobody follows (a benchmark, a tool) must not keep them without bound: past
    /// the buffer the oldest go, each counted once, and the rejections themselves are all still counted.
    @Test func unreadNoticesPastTheBufferAreCountedAndTheRejectionsStillAre() async throws {
        let broker = try startBroker()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("notices-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var sc = SpoolConfiguration(path: dir.appendingPathComponent("spool.sqlite").path)
        sc.durability = .normal
        let spool = try Spool(configuration: sc)
        let oversized = SpoolPublisher.noticeBuffer + 44
        for i in 0..<oversized {
            _ = try spool.appendDurably(
                Reading(
                    .sample, topic: "big/gw/raw", body: Array(#"{"i":\#(i),"pad":"0123456789abcdef"}"#.utf8), qos: 1,
                    ts: 1.7e9, clockSynchronized: true, run: "00c0ffee"))
        }
        let client = MQTTClient(configuration: testConfiguration(broker))
        let publisher = SpoolPublisher(
            spool: spool, client: client, window: 8, clock: SystemClock(), maxPayloadBytes: 16)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            group.addTask { for await e in client.events { publisher.clientEvent(e) } }
            group.addTask { await spool.run(clock: SystemClock(), committed: publisher.readingsAvailable) }
            group.addTask { await publisher.run() }
            try await waitUntil("every oversized reading rejected") {
                publisher.statistics.rejected >= UInt64(oversized)
            }
            let s = publisher.statistics
            #expect(s.rejected == UInt64(oversized))
            #expect(s.noticesDropped == 44, "all but the newest \(SpoolPublisher.noticeBuffer) notices went unread")
            group.cancelAll()
        }
    }
}
