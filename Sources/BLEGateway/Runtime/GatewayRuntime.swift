import BLEConfiguration
import BLEDomain
import BLEESPHome
import BLEHCI
import BLEPublishing
import BLESpool
import BLETransport
import Foundation
import Logging
import ServiceLifecycle

/// The gateway: sightings → interval summaries → spool → MQTT, with its status, adapter and health
/// topics. One `run()`; on graceful shutdown it stops in order — stop scanning, flush the last
/// interval, commit the spool, publish the retained offline status, drain, then disconnect MQTT (so
/// the broker does not send the last will).
public final class GatewayRuntime: Service, Sendable {
    public static let version = "0.1.0"

    let configuration: GatewayConfiguration
    let clock: any BLEClock
    let baseLogger: Logger
    let source: any SightingSource
    let spool: Spool
    let client: MQTTClient
    let publisher: SpoolPublisher
    let readings: GatewayReadings
    /// Fleet and per-gateway documents over the local file (RemoteConfigController); `inForce` is their result.
    let remote: RemoteConfigController
    /// The configuration in force: the file with the remote layers over it, replaced whole when a remote document
    /// applies. Everything the gateway tunes at run time reads it here.
    let inForce: Locked<GatewayConfiguration>
    /// Held while a remote document is judged, put in force and reported (GatewayRuntime+RemoteConfig.swift).
    let applying = Locked(())
    /// The peripheral links (configured intents, their GATT work and write commands).
    let peripherals: PeripheralService
    /// Each peripheral whose state was recorded, in order: one found for a name or service entry is announced to Home
    /// Assistant (`peripheralSeen`).
    let peripheralsSeen: AsyncStream<BDAddress>
    /// The enrolment commanded through the broker (`…/enrol`), one at a time.
    let enrolments = EnrolmentDesk()
    /// With `connections.owner_lease_s`: one owner per peripheral across the fleet.
    let ownership: OwnershipCoordinator?
    /// Home Assistant discovery (GatewayRuntime+HomeAssistant.swift).
    let homeAssistant: Locked<HomeAssistantLink>
    /// With `esphome_api.enabled`: the gateway as an ESPHome Bluetooth proxy, handed every sighting.
    let esphome: ESPHomeProxy?
    let clockSynchronized: @Sendable () -> Bool
    /// The service manager (systemd `Type=notify`): told when the gateway runs, fed its watchdog while it makes
    /// progress (`Liveness`), told when it stops.
    let notifier: ServiceManagerNotifier
    let state: Locked<RuntimeState>
    /// Sightings in, what they make out (Pipeline/SightingPipeline.swift): its own lock, taken once per sighting.
    let pipeline: Locked<SightingPipeline>
    /// Signalled when the broker accepts the connection and when a remote document arrives: the start-up wait for the
    /// retained configuration waits on it.
    let configurationProgress = WakeSignal()
    /// Wakes the ticker: a remote document changed the configuration in force (it takes new intervals at once), or
    /// an event ended its rest (`SightingPipeline.restEnded`).
    let tickerWake = WakeSignal()
    /// Signalled at each CONNACK under MQTT 3.1.1: the own-status echo's deadline starts (GatewayRuntime+StatusEcho).
    let statusEchoChanged = WakeSignal()
    /// MQTT 3.1.1: each family's read-back (PublishEcho), told by the publisher of each acknowledgement; signalled when
    /// an echo's deadline begins.
    let publishEcho: Locked<PublishEcho>
    let publishEchoChanged = WakeSignal()
    /// The read-backs of the current connection (GatewayRuntime+PublishEcho), cancelled when it ends.
    let readBacks = Locked<[Task<Void, Never>]>([])

    struct RuntimeState: Sendable {
        var adapters = AdapterStates()
        var reconnects = 0
        var connectedOnce = false
        /// The start-up barrier for the broker's retained configuration (RetainedConfigurationSync).
        var retainedSync = RetainedConfigurationSync.fresh()
        /// MQTT 3.1.1: whether the gateway's own online status comes back after each connection.
        var echo = StatusEcho()
        /// `run --trace ADDRESS`: the traced address and its explainer (GatewayRuntime+Trace).
        var traced: TraceState?
    }

    /// The logger at the level in force: the one it was given (`--log-level`), unless a remote document sets
    /// `log.level` to something other than the local file's.
    var logger: Logger {
        let level = inForce.withLock { $0.log.level }
        guard level != configuration.log.level, let l = Logger.Level(rawValue: level) else { return baseLogger }
        var logger = baseLogger
        logger.logLevel = l
        return logger
    }

    /// - Parameters:
    ///   - clockSynchronized: whether the wall clock can be trusted (the kernel's answer by default; always true
    ///     under a simulator's virtual clock).
    public convenience init(
        configuration: GatewayConfiguration, source: any SightingSource, clock: any BLEClock = SystemClock(),
        logger: Logger = Logger(label: "blegateway"),
        clockSynchronized: @escaping @Sendable () -> Bool = { SystemFacts.clockIsSynchronized() },
        notifier: ServiceManagerNotifier = ServiceManagerNotifier()
    ) throws {
        try self.init(
            configuration: configuration, makeSource: { _ in source }, clock: clock, logger: logger,
            clockSynchronized: clockSynchronized, notifier: notifier)
    }

    /// - Parameter makeSource: builds the sighting source, given the role it runs on each controller session (the
    ///   peripheral links; `HCISightingSource(…, role:)`).
    public init(
        configuration: GatewayConfiguration, makeSource: (any ControllerRole) throws -> any SightingSource,
        clock: any BLEClock = SystemClock(), logger: Logger = Logger(label: "blegateway"),
        clockSynchronized: @escaping @Sendable () -> Bool = { SystemFacts.clockIsSynchronized() },
        notifier: ServiceManagerNotifier = ServiceManagerNotifier()
    ) throws {
        self.configuration = configuration
        self.notifier = notifier
        self.clock = clock
        self.baseLogger = logger
        self.clockSynchronized = clockSynchronized
        state = Locked(RuntimeState())
        // From the file: the stored remote layers over it are put in force before the first scan (applyLive), which
        // publishes what they change (regions that appear or go).
        pipeline = Locked(try SightingPipeline(configuration, at: clock.now()))
        let topics = try Topics(prefix: configuration.mqtt.prefix, gatewayID: configuration.gateway.id)
        remote = RemoteConfigController(
            local: configuration,
            directory: configuration.remoteConfig.enabled ? Spool.directory(of: configuration.spool) : nil,
            verifier: try ConfigSigning.Verifier.configured(by: configuration))
        for problem in remote.startupProblems { logger.error("remote configuration: \(problem)") }
        let effective = remote.effective
        inForce = Locked(effective)
        if effective != configuration {
            logger.info("remote configuration from the local store in force (\(remote.layersInForce))")
        }
        let run =
            (0..<4).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            + String(format: "%08x", UInt32(truncatingIfNeeded: Int(clock.unixTime())))
        let expiry =
            configuration.publishing.sampleExpirySeconds > 0
            ? Double(configuration.publishing.sampleExpirySeconds) : nil
        readings = GatewayReadings(
            topics: topics, run: run, version: Self.version, started: clock.unixTime(),
            sampleQoS: UInt8(configuration.mqtt.qos), sampleExpiry: expiry)

        spool = try Spool.open(gateway: configuration.spool, logger: logger)
        client = MQTTClient(
            configuration: try MQTTConfiguration(
                gateway: configuration,
                will: readings.willPayload(ts: clock.unixTime(), synced: clockSynchronized()), on: readings.topics),
            clock: clock)
        let echo = Locked(PublishEcho(wait: Self.statusEchoWait.seconds))
        publishEcho = echo
        let readBack =
            configuration.mqtt.protocolVersion == 5
            ? nil : Self.readBackObserver(echo, changed: publishEchoChanged, clock: clock)
        publisher = SpoolPublisher(
            spool: spool, client: client, window: configuration.mqtt.inflight, clock: clock,
            maxPayloadBytes: configuration.mqtt.maxPayloadBytes, base: topics.base, acknowledged: readBack)
        let (seen, sawState) = AsyncStream.makeStream(of: BDAddress.self)
        peripheralsSeen = seen
        peripherals = Self.makePeripherals(
            configuration: effective, readings: readings, spool: spool,
            publisher: publisher, clock: clock, logger: logger,
            synced: clockSynchronized, stateSeen: { sawState.yield($0) })
        homeAssistant = Locked(
            HomeAssistantLink(announcer: HomeAssistantAnnouncer(topics: topics, version: Self.version)))
        if effective.connections.ownerLeaseSeconds > 0 {
            let addresses = effective.peripherals.compactMap { i -> BDAddress? in
                if case .address(let a) = i.match { return a } else { return nil }
            }
            ownership = OwnershipCoordinator(
                gateway: effective.gateway.id, addresses: addresses, lease: effective.connections.ownerLeaseSeconds,
                margin: effective.connections.ownerMarginDB, client: client, topics: topics, peripherals: peripherals,
                clock: clock, logger: logger)
        } else {
            ownership = nil
        }
        esphome = Self.makeESPHomeProxy(configuration, clock: clock, logger: logger)
        source = try makeSource(peripherals)
    }

    // MARK: - Run

    public func run() async throws {
        let started = clock.now()
        // The configuration in force at start (file and stored layers), reported first so that a verdict on a
        // document the broker sends next is the last word on the retained config/state topic.
        let top = remote.layersInForce.last ?? .gateway
        reportConfiguration(
            RemoteConfigController.Outcome(
                status: .applied, layer: top, version: remote.versions[top] ?? nil, errors: [], warnings: [],
                effective: remote.effective))
        // Every region starts unknown: overwrite whatever a previous run left retained.
        let startTS = clock.unixTime()
        for r in configuration.regions {
            recordState(
                readings.region(
                    r.id, state: .unknown, since: startTS, event: .determined, beacon: nil,
                    ts: startTS, synced: clockSynchronized()))
        }
        // Every configured peripheral starts disconnected: overwrite whatever a previous run left retained.
        peripherals.announce()
        // Home Assistant's discovery documents (retained, through the spool): they wait for it if it is not there.
        announceToHomeAssistant(effectiveConfiguration)
        // Long-lived parts, each with one run(), in start order; shutdown stops them in reverse (RunningParts).
        var parts = RunningParts()
        for t in followRemoteConfiguration() { parts.started("remote configuration", t) }
        parts.started("stale peripheral states", correctStalePeripheralStates())
        parts.started("write commands", followWrites())
        parts.started("enrolment commands", followEnrolments())
        parts.started("peripheral ownership", ownership?.start())
        parts.started("own status", followOwnStatus())
        parts.started("read-back deadlines", publishEchoDeadlines())
        parts.started("publisher notices", Task { await followPublisherNotices() })
        parts.started("peripherals seen", Task { for await a in peripheralsSeen { peripheralSeen(a) } })
        parts.started("esphome api", esphome.map { proxy in Task { await runESPHomeProxy(proxy) } })
        parts.started("mqtt", Task { [client] in try? await client.run() })
        parts.started("connection events", Task { await followConnection() })
        // Samples wait for their commit, not for the publisher's next poll as well.
        parts.started(
            "spool committer",
            Task { [publisher] in await spool.run(clock: clock, committed: publisher.readingsAvailable) })
        parts.started("publisher", Task { await publisher.run() })
        // Remote configuration before the first scan: the broker's retained documents (subscribed before the client
        // starts), within a bounded wait so a gateway without a broker still scans (with what the local store kept).
        await awaitRetainedConfiguration()
        notifier.notify("READY=1\nSTATUS=running")
        parts.started("ticker", Task { await tick(started: started) })
        // Finishes when `scan()` returns by itself (the end of a replayed capture); iterating it, unlike awaiting the
        // task's value, ends when the waiter is cancelled.
        let (scanEnded, scanEnd) = AsyncStream.makeStream(of: Void.self)
        parts.started(
            "scan",
            Task {
                await scan()
                scanEnd.finish()
            })

        // Wait for graceful shutdown (SIGTERM/SIGINT through the service group), the end of a replayed capture (the
        // scan returns: nothing more will come), or cancellation; only a graceful shutdown (or the capture's end)
        // waits for the broker to drain the spool.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await gracefulShutdown() }
            group.addTask { for await _ in scanEnded {} }
            await group.next()
            group.cancelAll()
        }
        let graceful = !Task.isCancelled
        notifier.notify("STOPPING=1\nSTATUS=stopping")

        // 1. End the peripheral links (their GATT work with them), then stop scanning and the ticker.
        await peripherals.stop()
        await parts.stop(through: "ticker")
        // 2. The last interval's summaries, then the retained offline status, committed together.
        flushIntervals()
        let now = clock.unixTime()
        do {
            _ = try spool.appendDurably(
                readings.status(online: false, reason: "shutdown", ts: now, synced: clockSynchronized()))
        } catch {
            logger.error("spool: cannot record the offline status: \(error)")
        }
        _ = try? spool.commit()
        publisher.readingsAvailable()
        // 3. Drain what the broker can take in a few seconds; the rest stays in the spool for the next start.
        if graceful { _ = await publisher.drain(within: .seconds(3)) }
        // 4. The rest in reverse: the publisher and committer, then the connection (a clean DISCONNECT, so the
        // broker discards the last will), then the followers that listened on it.
        await parts.stopAll()
        await stopFollowingHomeAssistant()
        logger.info("stopped; \(spool.statistics.depth) readings remain in the spool")
    }

    /// For tests and the health topic.
    public var spoolStatistics: SpoolStatistics { spool.statistics }
    public var publisherStatistics: SpoolPublisher.Statistics { publisher.statistics }
}
