import BLEPublishing
import BLETransport
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `blegateway fleet`: subscribes to `<prefix>/#`, folds everything into a `FleetModel`, records the plots'
/// history and serves the dashboard, its event streams and `/metrics`. Stateless across restarts apart from the
/// history: the retained topics rebuild the model. One `run()`; on graceful shutdown the pages' event streams end
/// first, then the HTTP server, then the subscription, the history and the broker connection (DISCONNECT).
public final class FleetService: Service, Sendable {
    public let configuration: FleetConfiguration
    let model: Locked<FleetModel>
    let broker: Locked<FleetViews.BrokerState>
    let changes = ChangeBroadcast()
    let history: FleetHistory?
    let clock: any BLEClock
    let logger: Logger
    let client: MQTTClient
    private let onListening: @Sendable (Int) async -> Void

    /// - Parameters:
    ///   - onListening: called with the bound port once the dashboard accepts connections.
    public init(configuration: FleetConfiguration, clock: any BLEClock = SystemClock(), logger: Logger,
                onListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws {
        self.configuration = configuration
        self.model = Locked(FleetModel(sites: configuration.sites))
        self.broker = Locked(FleetViews.BrokerState(url: configuration.brokerURL))
        self.history = try configuration.historyPath.map { try FleetHistory(path: $0) }
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
        self.client = MQTTClient(configuration: configuration.mqtt, clock: clock)
    }

    public func run() async throws {
        let client = self.client
        // One subscription per site, each folded by its own task into the one model (the broker filters: a service
        // never receives another site's topics).
        let streams = try configuration.sites.map {
            try client.subscribe("\($0)/#", qos: .atLeastOnce, buffer: configuration.receiveBuffer)
        }
        let app = Application(
            router: FleetRoutes.router(self),
            configuration: .init(address: .hostname(configuration.listenHost, port: configuration.listenPort),
                                 serverName: "blegateway-fleet"),
            onServerRunning: { [onListening] channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        defer { changes.finish() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            for messages in streams { group.addTask { await self.ingest(messages) } }
            group.addTask { await self.follow(client.events) }
            group.addTask { try await self.recordHistory() }
            group.addTask {
                // On graceful shutdown the server stops accepting and waits for the requests in flight: end the
                // pages' event streams first, so none holds it open. Then everything else is cancelled, in turn.
                try await withGracefulShutdownHandler {
                    try await app.run()
                } onGracefulShutdown: {
                    self.changes.finish()
                }
            }
            // Whichever ends first (the server after a graceful shutdown, or a part that failed) ends them all.
            try await group.next()
            group.cancelAll()
        }
    }

    func ingest(_ messages: AsyncStream<MQTTMessage>) async {
        for await m in messages {
            let now = clock.unixTime()
            model.withLock { $0.receive(topic: m.topic, payload: m.payload, retained: m.retain, now: now) }
            changes.changed()
        }
    }

    func follow(_ events: AsyncStream<MQTTEvent>) async {
        var everConnected = false
        for await e in events {
            broker.withLock { b in
                switch e {
                case .connected:
                    if everConnected { b.reconnects += 1 }
                    everConnected = true
                    b.connected = true
                    b.lastError = nil
                case .connectionRefused(let error), .connectionFailed(let error):
                    b.connected = false
                    b.lastError = "\(error)"
                case .disconnected(let error):
                    b.connected = false
                    b.lastError = error.map { "\($0)" }
                case .connecting, .unacknowledged, .backingOff:
                    break
                }
            }
            if case .connected = e { logger.info("fleet: connected to \(configuration.brokerURL)") }
            changes.changed()
        }
    }

    /// Every `FleetHistory.resolution` seconds: one point per series, and old beacons forgotten.
    func recordHistory() async throws {
        while true {
            try await clock.sleep(for: .seconds(FleetHistory.resolution))
            let now = clock.unixTime()
            let snapshot = model.withLock { m in
                m.forgetBeacons(olderThan: configuration.beaconTimeoutS, now: now)
                return m
            }
            do {
                try history?.record(snapshot, now: now)
            } catch {
                logger.error("fleet: history not recorded: \(error)")
            }
        }
    }

    /// The broker connection as the pages show it, with the service's own losses.
    func brokerState() -> FleetViews.BrokerState {
        var b = broker.withLock { $0 }
        b.droppedMessages = client.droppedDeliveries
        return b
    }

    // Views for the routes.
    func overview() -> FleetViews.Overview {
        let b = brokerState()
        let now = clock.unixTime()
        return model.withLock { FleetViews.overview($0, broker: b, now: now) }
    }

    func gatewayPage(_ id: String) -> FleetViews.GatewayPage {
        let b = brokerState()
        let now = clock.unixTime()
        return model.withLock { FleetViews.gateway($0, id: id, broker: b, now: now) }
    }

    func beaconPage(_ id: String) -> FleetViews.BeaconPage {
        let b = brokerState()
        let now = clock.unixTime()
        return model.withLock { FleetViews.beacon($0, id: id, broker: b, now: now) }
    }

    func sensorPage(_ id: String) -> FleetViews.SensorPage {
        let b = brokerState()
        let now = clock.unixTime()
        return model.withLock { FleetViews.sensor($0, id: id, broker: b, now: now) }
    }

    func metrics() -> String {
        let b = brokerState()
        return model.withLock { PrometheusExposition.render($0, broker: b) }
    }
}
