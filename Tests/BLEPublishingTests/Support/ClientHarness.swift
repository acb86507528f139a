import BLEPublishing
import BLETestSupport
import BLETransport
import Foundation
import Testing

/// Collects a client's events so a test can wait for one (bounded: a missing event fails, it never hangs).
actor EventRecorder {
    private(set) var events: [MQTTEvent] = []
    /// Waits for the next event, by id: all resumed at each event (they look again), or one when its wait ends.
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var lastWaiter = 0

    func append(_ event: MQTTEvent) {
        events.append(event)
        let woken = waiters.values
        waiters.removeAll()
        for w in woken { w.resume() }
    }

    /// Waits until `count` events satisfy `predicate`; returns them. It looks again at each event, not on a timer,
    /// and gives up after `limit` of real time, which is a guard against hanging, not a timing assertion.
    @discardableResult
    func waitFor(
        _ count: Int = 1, limit: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
        _ predicate: @escaping @Sendable (MQTTEvent) -> Bool
    ) async -> [MQTTEvent] {
        let met = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                while await !self.satisfiedOrNextEvent(count, predicate) {
                    if Task.isCancelled { return false }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !met {
            Issue.record(
                "timed out waiting for \(count) matching events; saw \(events)", sourceLocation: sourceLocation)
        }
        return events.filter(predicate)
    }

    /// True when `count` events satisfy `predicate` already; otherwise false at the next event, or when the waiting
    /// task is cancelled. The look and the waiter's registration are one step on the actor: an event appended
    /// between a look and a later registration would be missed, and its wait would run to its bound.
    private func satisfiedOrNextEvent(_ count: Int, _ predicate: (MQTTEvent) -> Bool) async -> Bool {
        if events.filter(predicate).count >= count { return true }
        lastWaiter += 1
        let id = lastWaiter
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                // Registered on the actor; a cancellation is seen here, or resumes it once registered.
                if Task.isCancelled { c.resume() } else { waiters[id] = c }
            }
        } onCancel: {
            Task { await self.giveUp(id) }
        }
        return false
    }

    private func giveUp(_ id: Int) { waiters.removeValue(forKey: id)?.resume() }

    func count(_ predicate: (MQTTEvent) -> Bool) -> Int { events.filter(predicate).count }
}

extension MQTTEvent {
    var isConnected: Bool { if case .connected = self { true } else { false } }
    var isConnecting: Bool { if case .connecting = self { true } else { false } }
    var refusal: MQTTError? { if case .connectionRefused(let e) = self { e } else { nil } }
    var failure: MQTTError? { if case .connectionFailed(let e) = self { e } else { nil } }
    var backoff: Duration? { if case .backingOff(let d) = self { d } else { nil } }
}

/// Runs `client.run()` and an event recorder beside `body`, then cancels both and waits for them to finish —
/// so every test also proves that `run()` returns on cancellation.
func withRunningClient<T: Sendable>(
    _ configuration: MQTTConfiguration, clock: any BLEClock = SystemClock(),
    _ body: @Sendable (MQTTClient, EventRecorder) async throws -> T
) async throws -> T {
    let client = MQTTClient(configuration: configuration, clock: clock)
    let recorder = EventRecorder()
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run() }
        group.addTask { for await event in client.events { await recorder.append(event) } }
        do {
            let result = try await body(client, recorder)
            group.cancelAll()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            try? await group.waitForAll()
            throw error
        }
    }
}

/// A configuration for the broker, with a unique client id and a short, jitter-free backoff.
func testConfiguration(
    _ broker: Mosquitto, protocolVersion: MQTTProtocolVersion = .v5,
    id: String = #function
) -> MQTTConfiguration {
    var configuration = MQTTConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = broker.port
    configuration.clientID = "test-\(id.prefix(20))-\(UUID().uuidString.prefix(6))"
        .replacingOccurrences(of: "(", with: "").replacingOccurrences(of: ")", with: "")
    configuration.protocolVersion = protocolVersion
    configuration.reconnect = .init(minDelay: .milliseconds(50), maxDelay: .milliseconds(400), jitter: 0)
    return configuration
}

/// Starts a plain broker or records why the test cannot run.
func startBroker(_ configure: (Mosquitto) throws -> Void = { _ in }) throws -> Mosquitto {
    let broker = try Mosquitto()
    try configure(broker)
    try broker.start()
    return broker
}

/// The first `count` messages of `stream`, or fewer (and a recorded issue) if they do not come within `limit`.
func collect(
    _ stream: AsyncStream<MQTTMessage>, count: Int, limit: Duration = .seconds(20),
    sourceLocation: SourceLocation = #_sourceLocation
) async -> [MQTTMessage] {
    let result = await withTaskGroup(of: [MQTTMessage]?.self) { group in
        group.addTask {
            var messages: [MQTTMessage] = []
            for await message in stream {
                messages.append(message)
                if messages.count == count { break }
            }
            return messages
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    guard let result else {
        Issue.record("timed out waiting for \(count) messages", sourceLocation: sourceLocation)
        return []
    }
    return result
}
