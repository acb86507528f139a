import BLESpool
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEPublishing

/// A reading the broker can never take, whichever way it says so, goes to the spool's dead letters, kept whole;
/// the readings behind it flow. Against a real mosquitto, both protocol versions, both of its limits.
@Suite(
    .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (apt-get install mosquitto)"),
    .timeLimit(.minutes(2)), .serialized)
struct DeadLetterTests {
    struct Poison: Sendable, CustomTestStringConvertible {
        var version: MQTTProtocolVersion
        var limit: String
        /// The reason the dead letter should carry.
        var reason: Int
        /// The poison is a small retained state rather than a large one.
        var retained = false
        /// The gateway's own `mqtt.max_payload_bytes`.
        var maxPayloadBytes = 0
        var testDescription: String { "MQTT \(version == .v5 ? "5" : "3.1.1"), \(limit)" }
    }

    static let poisons: [Poison] = [
        // MQTT 5: the broker answers PUBACK 0x95 Packet too large.
        Poison(version: .v5, limit: "message_size_limit 512", reason: MQTTReasonCode.packetTooLarge.rawValue),
        // MQTT 5: its CONNACK announces the Maximum Packet Size, and libmosquitto refuses locally.
        Poison(version: .v5, limit: "max_packet_size 1024", reason: MQTTError.oversizePacket),
        // MQTT 3.1.1: the broker closes the connection on the packet, every time it is sent.
        Poison(version: .v311, limit: "max_packet_size 1024", reason: 0),
        // MQTT 3.1.1 with message_size_limit: mosquitto acknowledges and drops (nothing to tell), so the operator
        // gives the gateway the same limit.
        Poison(version: .v311, limit: "message_size_limit 512", reason: MQTTError.payloadSize, maxPayloadBytes: 512),
        // MQTT 3.1.1 to a broker that keeps no retained messages: it closes the connection on a retained publish.
        Poison(version: .v311, limit: "retain_available false", reason: 0, retained: true),
    ]

    func makeSpool() throws -> Spool {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dead-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var c = SpoolConfiguration(path: dir.appendingPathComponent("spool.sqlite").path)
        c.durability = .normal
        return try Spool(configuration: c)
    }

    func state(_ body: String, retain: Bool = false) -> Reading {
        Reading(
            .state, topic: "dead/gw/status", body: Array(body.utf8), qos: 1, retain: retain, ts: 1.7e9,
            clockSynchronized: true, run: "00c0ffee")
    }

    func withPublisher(
        _ broker: Mosquitto, _ version: MQTTProtocolVersion, spool: Spool, maxPayloadBytes: Int = 0,
        _ body: @Sendable (MQTTClient, SpoolPublisher) async throws -> Void
    ) async throws {
        let client = MQTTClient(configuration: testConfiguration(broker, protocolVersion: version))
        let publisher = SpoolPublisher(
            spool: spool, client: client, window: 8, clock: SystemClock(),
            maxPayloadBytes: maxPayloadBytes, poisonAfterLosses: 3)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            group.addTask { for await e in client.events { publisher.clientEvent(e) } }
            group.addTask { await spool.run(clock: SystemClock(), committed: publisher.readingsAvailable) }
            group.addTask { await publisher.run() }
            try await body(client, publisher)
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    /// The observer's first CONNACK, then the broker's SUBACK for `filter`: whatever a publisher sends from then on
    /// reaches it (a SUBSCRIBE merely sent may still be unread when a fast publisher's PUBLISH is routed).
    func subscribed(_ client: MQTTClient, _ filter: String) async -> Bool {
        for await e in client.events {
            if case .connected = e {
                await client.subscribed(filter)
                return true
            }
        }
        return false
    }

    func until(_ condition: () -> Bool) async throws {
        try await waitUntil("the dead-letter test's condition", limit: .seconds(30)) { condition() }
    }

    @Test(arguments: poisons)
    func anOversizedReadingIsDeadLetteredAndTheRestFlow(_ poison: Poison) async throws {
        let broker = try startBroker { $0.extraConfiguration = [poison.limit] }
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("dead/#", qos: .atLeastOnce, buffer: 64)
        guard await subscribed(observer, "dead/#") else {
            Issue.record("the observer never connected")
            return
        }
        let big =
            poison.retained ? #"{"state":"online"}"# : #"{"blob":""# + String(repeating: "x", count: 4096) + #""}"#
        let seqs = try [#"{"n":1}"#, big, #"{"n":3}"#, #"{"n":4}"#].map {
            try spool.appendDurably(state($0, retain: poison.retained && $0 == big))
        }
        try await withPublisher(broker, poison.version, spool: spool, maxPayloadBytes: poison.maxPayloadBytes) {
            _, publisher in
            let arrived = await collect(received, count: 3)
            #expect(
                arrived.map { String(decoding: $0.payload, as: UTF8.self).contains("\"n\":") } == [true, true, true])
            try await until { spool.statistics.depth == 0 && spool.statistics.deadLetters == 1 }
            #expect(spool.statistics.depth == 0, "nothing else waits behind the poison")
            let letters = try spool.deadLetters()
            #expect(letters.map(\.spooled.seq) == [seqs[1]])
            #expect(letters.first?.spooled.reading.body == Array(big.utf8), "kept whole")
            #expect(letters.first?.reason.code == poison.reason, "\(letters.first?.reason.description ?? "none")")
            #expect(publisher.statistics.rejected == 1)
            #expect(publisher.statistics.acknowledged == 3)
        }
    }

    /// MQTT 5 with `retain_available false`: the CONNACK says so, and retained states go out unretained (to the
    /// subscribers of the moment) rather than nowhere; counted.
    @Test func aBrokerWithoutRetainedMessagesGetsStatesUnretained() async throws {
        let broker = try startBroker { $0.extraConfiguration = ["retain_available false"] }
        let spool = try makeSpool()
        let observer = MQTTClient(configuration: testConfiguration(broker, id: "observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("dead/#", qos: .atLeastOnce, buffer: 64)
        guard await subscribed(observer, "dead/#") else {
            Issue.record("the observer never connected")
            return
        }
        for n in 1...3 { _ = try spool.appendDurably(state(#"{"n":\#(n)}"#, retain: true)) }
        try await withPublisher(broker, .v5, spool: spool) { client, publisher in
            let arrived = await collect(received, count: 3)
            #expect(arrived.count == 3)
            try await until { spool.statistics.depth == 0 }
            #expect(client.unretainedPublishes == 3)
            #expect(publisher.statistics.acknowledged == 3)
            #expect(spool.statistics.deadLetters == 0)
        }
    }

    /// Requeued after the cause is fixed (here: a broker without the limit), a dead letter is delivered with its seq.
    @Test func aRequeuedDeadLetterIsDeliveredWithItsSeqOnceTheBrokerTakesIt() async throws {
        let strict = try startBroker { $0.extraConfiguration = ["message_size_limit 512"] }
        let spool = try makeSpool()
        let big = #"{"blob":""# + String(repeating: "y", count: 2048) + #""}"#
        let seq = try spool.appendDurably(state(big))
        try await withPublisher(strict, .v5, spool: spool) { _, _ in
            try await until { spool.statistics.deadLetters == 1 }
        }
        #expect(spool.statistics.deadLetters == 1)
        #expect(try spool.requeueDeadLetters() == 1)
        #expect(spool.statistics.depth == 1 && spool.statistics.deadLetters == 0)

        let lenient = try startBroker()
        let observer = MQTTClient(configuration: testConfiguration(lenient, id: "observer"))
        let watch = Task { try await observer.run() }
        defer { watch.cancel() }
        let received = try observer.subscribe("dead/#", qos: .atLeastOnce, buffer: 8)
        guard await subscribed(observer, "dead/#") else {
            Issue.record("the observer never connected")
            return
        }
        try await withPublisher(lenient, .v5, spool: spool) { _, _ in
            let arrived = await collect(received, count: 1)
            let envelope = try arrived.first.map {
                try JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any]
            }
            #expect(envelope??["seq"] as? Int == Int(seq))
            try await until { spool.statistics.depth == 0 }
        }
    }
}
