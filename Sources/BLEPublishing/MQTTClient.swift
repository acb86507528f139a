import BLETransport

/// An MQTT client over libmosquitto: a service whose `run()` keeps a connection up until cancelled, plus
/// `publish` that resumes on the broker's acknowledgement and `subscribe` that streams matching messages.
///
/// ```swift
/// let client = MQTTClient(configuration: config)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await client.run() }
///     let id = try await client.publish(MQTTMessage(topic: "gw/1/status", payload: Array("up".utf8)))
/// }
/// ```
///
/// Delivery contract for the spool: `publish` returns only after PUBACK (QoS 1) / PUBCOMP (QoS 2) / the socket
/// write (QoS 0) for that very message, and throws `.notAcknowledged` if its connection ends first, `.notConnected`
/// when there is no connection (nothing is queued offline), `.inFlightWindowFull` beyond `maxInFlight`.
public final class MQTTClient: Sendable {
    public let configuration: MQTTConfiguration
    /// Connection events, oldest first; keeps the newest 1024 if nobody reads.
    public let events: AsyncStream<MQTTEvent>
    private let eventSink: AsyncStream<MQTTEvent>.Continuation
    private let core: MQTTConnectionCore
    private let clock: any BLEClock
    private let rotation: Locked<BrokerRotation>

    /// - Parameters:
    ///   - configuration: broker, session, TLS, credentials, will, backoff.
    ///   - clock: waits between connection attempts (a `ManualClock` in tests).
    public init(configuration: MQTTConfiguration, clock: any BLEClock = SystemClock()) {
        self.configuration = configuration
        self.clock = clock
        self.core = MQTTConnectionCore(configuration: configuration)
        var random = SystemRandomNumberGenerator()
        var brokers = configuration.brokers
        if brokers.isEmpty { brokers = [.init(host: configuration.host, port: configuration.port)] }
        rotation = Locked(BrokerRotation(brokers, failover: configuration.failover, using: &random))
        (events, eventSink) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .bufferingNewest(1024))
    }

    /// Connects, and reconnects with exponential backoff and jitter, until the task is cancelled; then sends
    /// DISCONNECT (so the broker drops the last will), waits for libmosquitto's thread to end and returns.
    /// Throws only for what retrying cannot fix: unreadable credential files, a second concurrent `run()`.
    public func run() async throws {
        let secrets = try MQTTSecrets.load(configuration)
        try core.begin(secrets: secrets)
        defer { core.end() }
        await withTaskCancellationHandler {
            await serve()
        } onCancel: {
            core.requestStop()
        }
    }

    /// Publishes `message` and returns when the broker has acknowledged it (see the type's delivery contract).
    @discardableResult
    public func publish(_ message: MQTTMessage) async throws -> MQTTPublishID {
        try await core.publish(message)
    }

    /// Hands `message` to the connection at once, in call order, and calls `completion` when it is resolved —
    /// acknowledged, refused with a reason, or failed (not connected, window full, connection ended). For callers
    /// that must keep order across many messages in flight, which concurrent `publish` calls cannot promise.
    public func submit(
        _ message: MQTTMessage,
        completion: @escaping @Sendable (Result<MQTTPublishID, MQTTError>) -> Void
    ) {
        core.submit(message, completion: completion)
    }

    /// The broker the client is connected to now (one of `configuration.brokers`); nil between connections.
    public var broker: MQTTConfiguration.Broker? { rotation.withLock { $0.current } }

    /// Connections accepted by another broker than the one before (`BrokerRotation`): with one broker, always 0.
    public var failovers: Int { rotation.withLock { $0.failovers } }

    /// Publishes handed to the broker and not yet acknowledged (at most `configuration.maxInFlight`).
    public var inFlightCount: Int { core.inFlightCount }

    /// Retained publishes sent without the retain flag because the broker's CONNACK said it keeps no retained
    /// messages (MQTT 5 Retain Available = 0).
    public var unretainedPublishes: Int { core.unretainedCount }

    /// Received messages dropped since start because a `subscribe` stream's reader fell a whole buffer behind: a
    /// subscriber that must not lose data silently counts and shows these.
    public var droppedDeliveries: Int { core.droppedDeliveriesCount }

    /// Messages matching `filter` (wildcards allowed), retained ones included, from now on and across reconnects
    /// (the filter is subscribed again after every CONNACK). Ending the stream's iteration unsubscribes.
    /// `buffer` unread messages are kept; beyond that the oldest are dropped (counted in `droppedDeliveries`):
    /// a subscriber that takes bursts (thousands of gateways publishing on the same second) asks for more.
    public func subscribe(
        _ filter: String, qos: MQTTQoS = .atLeastOnce,
        buffer: Int = 4096
    ) throws(MQTTError) -> AsyncStream<MQTTMessage> {
        try core.subscribe([filter], qos: qos, buffer: buffer)
    }

    /// One stream for several filters: each message the broker sends that matches any of them is read once, in the
    /// order the broker sent them across all the filters (the retained documents a subscription found, then a message
    /// published after subscribing, are read in that order). Overlapping filters may bring copies of one message: the
    /// broker may send one per matching subscription (MQTT 5 §3.3.4). Otherwise as `subscribe(_:qos:buffer:)`.
    public func subscribe(
        _ filters: [String], qos: MQTTQoS = .atLeastOnce,
        buffer: Int = 4096
    ) throws(MQTTError) -> AsyncStream<MQTTMessage> {
        try core.subscribe(filters, qos: qos, buffer: buffer)
    }

    /// Returns once the broker has acknowledged this client's subscription to `filter` on the current connection
    /// (its SUBACK): whatever is published from then on reaches the stream `subscribe(filter)` returned. Before the
    /// first connection, and after a reconnect until the filter is acknowledged again, it waits; cancelling the
    /// caller ends the wait.
    public func subscribed(_ filter: String) async { await core.subscribed(filter) }

    private func serve() async {
        var backoff = MQTTBackoff(configuration.reconnect)
        var random = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            attempt += 1
            let broker = rotation.withLock { $0.dial() }
            do {
                guard try core.startAttempt(to: broker) else { return }
                eventSink.yield(.connecting(attempt: attempt, broker: broker))
                if await awaitConnectionEnd() {
                    backoff.reset()
                    attempt = 0
                }
            } catch {
                // The instance could not be configured (e.g. a TLS file is missing): nothing was started.
                // Files can appear later (certificate rotation), so this is retried like any failed attempt.
                eventSink.yield(.connecting(attempt: attempt, broker: broker))
                eventSink.yield(.connectionFailed(error))
            }
            rotation.withLock { $0.ended(using: &random) }
            if core.isStopRequested { return }
            let delay = backoff.next(using: &random)
            eventSink.yield(.backingOff(delay: delay))
            do { try await clock.sleep(for: delay) } catch { return }
        }
    }

    /// Follows one connection from its start to `.loopExited`; returns whether a CONNACK was accepted.
    private func awaitConnectionEnd() async -> Bool {
        var established = false
        var refused = false
        while true {
            switch await core.nextLoopEvent() {
            case .connack(let rc, let flags):
                if rc == 0 {
                    established = true
                    rotation.withLock { $0.accepted() }
                    core.markConnected()
                    eventSink.yield(.connected(sessionPresent: flags & 1 != 0))
                } else {
                    refused = true
                    eventSink.yield(.connectionRefused(.refused(rc, protocolVersion: configuration.protocolVersion)))
                }
            case .disconnected(let rc, let errno, let detail):
                let failed = core.markDisconnected()
                if established {
                    eventSink.yield(
                        .disconnected(rc == mosqSuccess ? nil : .disconnect(rc, errno: errno, detail: detail)))
                } else if !refused {
                    eventSink.yield(.connectionFailed(.disconnect(rc, errno: errno, detail: detail)))
                }
                if failed > 0 { eventSink.yield(.unacknowledged(count: failed)) }
            case .connectFailed(let rc, let errno, let detail):
                eventSink.yield(.connectionFailed(.library(rc, errno: errno, detail: detail)))
            case .loopExited:
                let failed = core.markDisconnected()
                if failed > 0 { eventSink.yield(.unacknowledged(count: failed)) }
                return established
            }
        }
    }
}
