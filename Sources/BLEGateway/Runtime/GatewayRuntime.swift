import BLEConfiguration
import BLEDomain
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
    /// The enrolment commanded through the broker (`…/enrol`), one at a time.
    let enrolments = EnrolmentDesk()
    /// With `connections.owner_lease_s`: one owner per peripheral across the fleet.
    let ownership: OwnershipCoordinator?
    /// Home Assistant discovery (GatewayRuntime+HomeAssistant.swift).
    let homeAssistant: Locked<HomeAssistantLink>
    let clockSynchronized: @Sendable () -> Bool
    /// The service manager (systemd `Type=notify`): told when the gateway runs, fed its watchdog while it makes
    /// progress (`Liveness`), told when it stops.
    let notifier: ServiceManagerNotifier
    /// `run --trace ADDRESS`: the traced address and its explainer (GatewayRuntime+Trace).
    let traced = Locked<TraceState?>(nil)
    let state: Locked<RuntimeState>
    /// Sightings in, what they make out (Pipeline/SightingPipeline.swift): its own lock, taken once per sighting.
    let pipeline: Locked<SightingPipeline>
    /// Signalled when the broker accepts the connection and when a remote document arrives: the start-up wait for the
    /// retained configuration waits on it.
    let configurationProgress = WakeSignal()
    /// Signalled when a remote document changed the configuration in force: the ticker takes new intervals at once.
    let configurationApplied = WakeSignal()
    /// Signalled at each CONNACK under MQTT 3.1.1: the own-status echo's deadline starts (GatewayRuntime+StatusEcho).
    let statusEchoChanged = WakeSignal()

    struct RuntimeState: Sendable {
        var adapter: AdapterReport?
        var adapterSince = 0.0
        /// With two adapters: each one's last report and since when it is in that state.
        var adapterSlots: [AdapterRoles.Slot: (report: AdapterReport, since: Double)] = [:]
        var reconnects = 0
        var connectedOnce = false
        /// MQTT 3.1.1: whether the gateway's own online status comes back after each connection.
        var echo = StatusEcho()
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
        // A bare file name (`--spool gw.sqlite`) lives in the working directory.
        let parent = (configuration.spool.path as NSString).deletingLastPathComponent
        let spoolDirectory = parent.isEmpty ? "." : parent
        remote = RemoteConfigController(
            local: configuration,
            directory: configuration.remoteConfig.enabled ? spoolDirectory : nil,
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

        var spoolConfiguration = SpoolConfiguration(path: configuration.spool.path)
        spoolConfiguration.maxBytes = Int(configuration.spool.maxMegabytes * 1_048_576)
        spoolConfiguration.reserveBytes = Int(configuration.spool.reserveMegabytes * 1_048_576)
        spoolConfiguration.commitWindow = .milliseconds(Int64(configuration.spool.commitWindowMS))
        spoolConfiguration.urgentCommitWindow = .microseconds(Int64(configuration.spool.valueCommitWindowMS * 1000))
        try FileManager.default.createDirectory(
            atPath: spoolDirectory, withIntermediateDirectories: true)
        spool = try Spool(configuration: spoolConfiguration)
        let opened = spool.statistics.openReport
        if opened.corruption != nil || opened.resumedSalvageOf != nil || opened.setAsideRemoved > 0 {
            logger.error("spool: \(spool.statistics.openReport)")
        }
        let spoolLog = logger
        spool.observeQuarantines { report in
            spoolLog.error("spool: set aside while running, continuing on a fresh file: \(report)")
        }
        // At debug level, the seqs each commit made durable: what a reader of the log may hold the spool to after a
        // power cut (the drill in Tests/kernel/powerloss.sh does).
        spool.observeCommits { seqs in
            spoolLog.debug("spool: seq \(seqs.lowerBound)...\(seqs.upperBound) durable")
        }

        client = MQTTClient(
            configuration: try Self.mqttConfiguration(
                configuration, readings: readings, clock: clock,
                synced: clockSynchronized()), clock: clock)
        let log = logger
        // Set once `self` exists: a refusal episode's start and end are told on the status topic too.
        let refusalChanged = Locked<(@Sendable () -> Void)?>(nil)
        publisher = SpoolPublisher(
            spool: spool, client: client, window: configuration.mqtt.inflight, clock: clock,
            maxPayloadBytes: configuration.mqtt.maxPayloadBytes, base: topics.base,
            onRejected: { r, e in
                log.error(
                    """
                    reading seq \(r.seq) on \(r.reading.topic) cannot be delivered (\(e)): kept in the spool's dead \
                    letters (blegateway spool dead-letters)
                    """)
            },
            onRefusal: { episode in
                // Once per family and episode: the first refusal, and when the family is taken again.
                switch episode {
                case .began(let family, let r, let e):
                    log.error(
                        """
                        broker refuses publishes on \(family)/… (\(MQTTReasonCode(rawValue: e.code)), first seq \(r.seq) \
                        on \(r.reading.topic)): kept in the spool and sent again with backoff; other topics go on
                        """)
                case .ended(let family, expired: false):
                    log.notice("broker accepts publishes on \(family)/… again; the readings it refused are being sent")
                case .ended(let family, expired: true):
                    log.notice("no reading refused on \(family)/… is left to send (they expired); refusal ended")
                }
                refusalChanged.withLock { $0 }?()
            })
        // Set once `self` exists: a device found for a name or service entry is announced to Home Assistant.
        let seen = Locked<(@Sendable (BDAddress) -> Void)?>(nil)
        peripherals = Self.makePeripherals(
            configuration: effective, readings: readings, spool: spool,
            publisher: publisher, clock: clock, logger: logger,
            synced: clockSynchronized, stateSeen: { a in seen.withLock { $0 }?(a) })
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
        source = try makeSource(peripherals)
        seen.withLock { $0 = { [weak self] a in self?.peripheralSeen(a) } }
        refusalChanged.withLock {
            $0 = { [weak self] in
                guard let self else { return }
                // The publisher's own record (reason and start), not the callback's error.
                recordState(
                    readings.status(
                        online: true, reason: nil, refusal: publisher.statistics.refusal,
                        ts: clock.unixTime(), synced: clockSynchronized()))
            }
        }
    }

    /// Room in the client's window for ownership claims (one per peripheral changing hands at once; a claim that finds
    /// the window full is made again by its state machine).
    static let claimsInFlight = 32

    static func mqttConfiguration(
        _ c: GatewayConfiguration, readings: GatewayReadings, clock: any BLEClock,
        synced: Bool
    ) throws -> MQTTConfiguration {
        let broker = try BrokerAddress(parsing: c.mqtt.broker)
        var m = MQTTConfiguration()
        m.host = broker.host
        m.port = broker.port
        m.clientID = c.mqtt.clientID ?? "blegateway-\(c.gateway.id)"
        m.protocolVersion = c.mqtt.protocolVersion == 5 ? .v5 : .v311
        m.keepAlive = .seconds(c.mqtt.keepAliveSeconds)
        m.session =
            c.mqtt.sessionExpirySeconds > 0 ? .persistent(expiry: .seconds(c.mqtt.sessionExpirySeconds)) : .clean
        if broker.tls || c.mqtt.tls.caFile != nil || c.mqtt.tls.certFile != nil {
            m.tls = .init(
                caFile: c.mqtt.tls.caFile, certificateFile: c.mqtt.tls.certFile, keyFile: c.mqtt.tls.keyFile,
                keyPassphraseFile: c.mqtt.tls.keyPassphraseFile, verifyHostname: c.mqtt.tls.verifyHostname)
        }
        if let user = c.mqtt.usernameFile {
            m.credentials = .init(usernameFile: user, passwordFile: c.mqtt.passwordFile)
        }
        m.will = .init(
            topic: readings.topics.status, payload: readings.willPayload(ts: clock.unixTime(), synced: synced),
            qos: .atLeastOnce, retain: true)
        m.reconnect = .init(
            minDelay: .seconds(c.mqtt.reconnectMinSeconds), maxDelay: .seconds(c.mqtt.reconnectMaxSeconds))
        // The readings' window is the spool publisher's alone: discovery documents and ownership claims have room of
        // their own beside it, so a burst of either never makes a reading fail for a full window.
        m.maxInFlight = c.mqtt.inflight + DiscoveryOutbox.defaultQuota + Self.claimsInFlight
        return m
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

    /// Bridges the MQTT client's events to the publisher and the status topic.
    func followConnection() async {
        for await event in client.events {
            switch event {
            case .connected(let sessionPresent):
                let first = state.withLock { s -> Bool in
                    defer { s.connectedOnce = true }
                    if s.connectedOnce { s.reconnects += 1 }
                    return !s.connectedOnce
                }
                logger.info("connected to \(configuration.mqtt.broker) (session present: \(sessionPresent))")
                statusEchoConnected()
                // Online again: a retained status that overrides the last will's offline. It goes through the spool
                // like every state event, so it takes its place in the sequence.
                recordState(
                    readings.status(
                        online: true, reason: first ? nil : "reconnected", ts: clock.unixTime(),
                        synced: clockSynchronized()))
                ownership?.brokerConnected()
                configurationProgress.signal()
                homeAssistantConnected(reconnected: !first)
            case .disconnected(let error):
                if let error { logger.warning("broker connection lost: \(error)") }
                state.withLock { $0.echo.disconnected() }
                homeAssistantDisconnected()
                ownership?.brokerLost()
            case .connectionRefused(let error):
                logger.error("broker refused the connection: \(error)")
            case .connectionFailed(let error):
                logger.warning("cannot reach the broker: \(error)")
            case .backingOff(let delay):
                logger.debug("next broker connection attempt in \(delay)")
            default:
                break
            }
            // After the gateway's own steps: on a connection, the online status is in the spool before the
            // publisher rewinds to send what the broker has not acknowledged.
            publisher.clientEvent(event)
        }
    }

    /// A state event: committed before this returns, then published without waiting for the poll.
    func recordState(_ reading: Reading) {
        Self.recordDurably(reading, spool: spool, publisher: publisher, logger: logger)
    }

    /// `recordState` for the parts built before `self` (the peripheral service): the same steps, given the pieces.
    static func recordDurably(_ reading: Reading, spool: Spool, publisher: SpoolPublisher, logger: Logger) {
        do {
            _ = try spool.appendDurably(reading)
        } catch let e as SpoolError where e.code == .bufferFull {
            // Not taken: the buffer already holds as many states as it may while commits fail. Counted (health
            // `spool.dropped_states`), never appended a second way.
            logger.error("spool: state on \(reading.topic) dropped: \(e)")
        } catch {
            // Disk full or similar: the spool took it and keeps it buffered, in order, until a commit succeeds.
            // Appending it again would store it twice under two seqs.
            logger.error("spool: \(error); the state stays buffered until a commit succeeds")
        }
        publisher.readingsAvailable()
    }

    /// The scanning side: runs the source, reporting adapter states, until cancelled; after a failure it waits with
    /// exponential backoff (1 s … 30 s) and tries again, so a missing adapter is a published state, not a crash loop.
    /// Returns at the end of a replayed capture: the gateway then stops as on SIGTERM, once, with every report of
    /// the file through.
    func scan() async {
        var delay: Duration = .seconds(1)
        while !Task.isCancelled {
            do {
                try await source.run(
                    adapter: { [self] report in adapterChanged(report) },
                    sighting: { [self] s in observe(s) })
                delay = .seconds(1)
            } catch is CancellationError {
                break
            } catch let stop as HCISightingSource.SourceStopped where stop.kind == .endOfCapture {
                let c = source.counters
                logger.notice(
                    "\(configuration.adapter.device): end of the capture: \(c.reports) reports, \(c.dropped.total) dropped; stopping"
                )
                if let damage = stop.damage { logger.warning("\(damage)") }
                return
            } catch {
                logger.error("adapter \(configuration.adapter.device): \(error)")
                if state.withLock({ $0.adapter?.state }) == .poweredOn || state.withLock({ $0.adapter == nil }) {
                    adapterChanged(
                        AdapterReport(
                            state: .unknown, device: configuration.adapter.device,
                            mode: configuration.adapter.mode, reason: "\(error)"))
                }
            }
            if Task.isCancelled { break }
            try? await clock.sleep(for: delay)
            delay = min(delay * 2, .seconds(30))
        }
    }

    func adapterChanged(_ report: AdapterReport) {
        let now = clock.unixTime()
        if report.scope == .slot {
            // One of two adapters: its own retained topic; the gateway's `…/adapter` (the one that scans) follows.
            let slot = report.slot ?? .primary
            let since: Double? = state.withLock { s in
                guard s.adapterSlots[slot]?.report != report else { return nil }
                let since = s.adapterSlots[slot]?.report.state == report.state ? s.adapterSlots[slot]!.since : now
                s.adapterSlots[slot] = (report, since)
                return since
            }
            if let since { recordState(readings.adapter(report, since: since, ts: now, synced: clockSynchronized())) }
            return
        }
        let (changed, scanningAgain): (Double?, Bool) = state.withLock { s in
            guard s.adapter != report else { return (nil, false) }
            let stateChanged = s.adapter?.state != report.state
            if stateChanged { s.adapterSince = now }
            s.adapter = report
            return (s.adapterSince, stateChanged && report.state == .poweredOn)
        }
        if scanningAgain {
            let at = clock.now()
            publish(pipeline.withLock { $0.adapterScanning(at: at) })
        }
        guard let since = changed else { return }
        logger.info("adapter \(report.device): \(report.state)\(report.reason.map { " (\($0))" } ?? "")")
        recordState(readings.adapter(report, since: since, ts: now, synced: clockSynchronized()))
    }

    /// One sighting: seen by the peripheral links and the tracer, then through the pipeline; what it makes goes to
    /// the spool (region changes durably, before they are published).
    func observe(_ s: Sighting) {
        traceIfTraced(s)
        // Before the scan filter: a wanted peripheral need not be a beacon anyone publishes.
        peripherals.observe(s)
        let now = clock.now()
        var sensor: SensorReading?
        let out = pipeline.withLock { $0.observe(s, at: now, sensor: &sensor) }
        publish(out.regionEvents)
        if out.raw { _ = spool.append(readings.raw(s, synced: clockSynchronized())) }
        if let r = sensor {
            _ = spool.append(
                readings.sensor(r, address: s.address, rssi: s.rssi, ts: s.timestamp, synced: clockSynchronized()))
            announceSensorToHomeAssistant(s.address, model: r.model.description, keys: GatewayReadings.valueKeys(r))
        }
    }

    /// Every ranging interval: the beacons' summaries; every health interval: the health topic.
    func tick(started: Duration) async {
        let publishing = inForce.withLock { $0.publishing }
        var interval = Duration.seconds(publishing.rangingIntervalSeconds)
        var healthEvery = Duration.seconds(publishing.healthIntervalSeconds)
        var next = clock.now() + interval
        var nextHealth = clock.now() + .seconds(min(5, publishing.healthIntervalSeconds))
        var lastAck: UInt64 = 0
        var lastReports = 0
        var lastHealthTime = clock.now()
        var watchdog = makeWatchdog()
        while !Task.isCancelled {
            // Until the next summary, health report or watchdog feed, or until a remote document changes the
            // configuration in force (its intervals then take effect at once, not at the end of a long old one).
            let due = min(next, nextHealth, watchdog?.next ?? next)
            let before = clock.now()
            if due > before { await configurationApplied.wait(upTo: due - before, clock: clock) }
            if Task.isCancelled { break }
            let now = clock.now()
            let p = inForce.withLock { $0.publishing }
            if Duration.seconds(p.rangingIntervalSeconds) != interval {
                next = next - interval + .seconds(p.rangingIntervalSeconds)
                interval = .seconds(p.rangingIntervalSeconds)
            }
            if Duration.seconds(p.healthIntervalSeconds) != healthEvery {
                nextHealth = nextHealth - healthEvery + .seconds(p.healthIntervalSeconds)
                healthEvery = .seconds(p.healthIntervalSeconds)
            }
            feedWatchdog(&watchdog, now: now)
            if now >= next {
                flushIntervals()
                next += interval
                if next < now { next = now + interval }  // fell behind (suspended): do not burst
            }
            if now >= nextHealth {
                let stats = publisher.statistics
                let elapsed = max((now - lastHealthTime).seconds, 0.001)
                let rate = Double(stats.acknowledged &- lastAck) / elapsed
                lastAck = stats.acknowledged
                lastHealthTime = now
                let counters = source.counters
                // A new session's counters start again; a count that went down is a restart, not a negative rate.
                let reportRate = Double(max(0, counters.reports - lastReports)) / elapsed
                lastReports = counters.reports
                let reconnects = state.withLock { $0.reconnects }
                let (sensors, rateLimited, telemetryDiscarded, tracked, evicted, identity, regions) = pipeline.withLock
                {
                    p in
                    let ids = p.regions.regions.map(\.id)
                    return (
                        (gate: p.sensorGate.statistics, tracked: p.sensorGate.trackedCount), p.raw.limited,
                        p.telemetryDiscarded, p.ranging.trackedCount, p.ranging.statistics.evictions,
                        configuration.identityKeys.isEmpty
                            ? nil
                            : (p.resolver.resolutions, p.resolver.hashComputations, p.resolver.cacheResets),
                        ids.isEmpty ? nil : (ids.count, ids.filter { p.regions.state(of: $0) == .inside }.count)
                    )
                }
                let health = GatewayReadings.Health(
                    uptime: (now - started).seconds, spool: spool.statistics, publish: stats,
                    unretained: client.unretainedPublishes,
                    deniedSuspected: configuration.mqtt.protocolVersion == 5
                        ? nil : state.withLock { $0.echo.suspected },
                    publishRate: rate,
                    reconnects: reconnects, reports: counters.reports, reportRate: reportRate,
                    malformedEvents: counters.malformedEvents, dropped: counters.dropped,
                    reassembly: counters.reassembly, rawRateLimited: rateLimited,
                    telemetryDiscarded: telemetryDiscarded, droppedDeliveries: client.droppedDeliveries,
                    trackedBeacons: tracked, evictedBeacons: evicted, residentBytes: SystemFacts.residentBytes(),
                    adapter: (source as? any AdapterLifecycleReporting)?.lifecycleStatistics,
                    adapterSlots: (source as? any AdapterLifecycleReporting)?.adapterSlots,
                    peripherals: configuration.peripherals.isEmpty
                        && inForce.withLock({ $0.peripherals.isEmpty })
                        ? nil : peripherals.statistics,
                    identity: identity, regions: regions, homeAssistant: homeAssistantCounts,
                    sensors: configuration.sensors.enabled ? sensors : nil)
                _ = spool.append(readings.health(health, ts: clock.unixTime(), synced: clockSynchronized()))
                nextHealth += healthEvery
                if nextHealth < now { nextHealth = now + healthEvery }
            }
        }
    }

    func flushIntervals() {
        let now = clock.now()
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        let scanning = state.withLock { $0.adapter?.state == .poweredOn }
        let end = pipeline.withLock { $0.tick(at: now, scanning: scanning) }
        publish(end.regionEvents)
        let (interval, ranging) = inForce.withLock { ($0.publishing.rangingIntervalSeconds, $0.ranging) }
        let filter = GatewayReadings.filterDescription(ranging)
        for u in end.updates {
            _ = spool.append(
                readings.beacon(
                    u, interval: interval, filter: filter, telemetry: end.telemetry[u.address],
                    ts: ts, synced: synced))
        }
    }

    /// Region events as retained state readings: a `determined` change, with the enter or exit it makes if any.
    func publish(_ events: [RegionEvent]) {
        guard !events.isEmpty else { return }
        let now = clock.now()
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        for (e, regionState, change) in SightingPipeline.regionChanges(events) {
            recordState(
                readings.region(
                    e.region, state: regionState, since: ts - (now - e.time).seconds, event: change,
                    beacon: e.identity, ts: ts, synced: synced))
        }
    }

    /// For tests and the health topic.
    public var spoolStatistics: SpoolStatistics { spool.statistics }
    public var publisherStatistics: SpoolPublisher.Statistics { publisher.statistics }
}
