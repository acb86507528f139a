import BLEConfiguration
import BLEDomain
import BLEPublishing
import BLESpool
import BLETransport
import Foundation

/// The running gateway's side of remote configuration: subscribe to the fleet and per-gateway topics, apply what
/// is accepted without a restart, and report every verdict on `config/state`.
extension GatewayRuntime {
    /// Subscribes to both config topics and the start-up sync topic, in one stream (RetainedConfigurationSync: the
    /// nonce coming back means every retained document before it was applied), before the client connects, and
    /// follows them until cancelled. Returns the follower's task.
    func followRemoteConfiguration() -> [Task<Void, Never>] {
        // What the stored layers changed from the file (regions, ranging, scan parameters) before the first scan.
        applyLive(from: configuration, to: effectiveConfiguration, start: true)
        guard configuration.remoteConfig.enabled else { return [] }
        let topics = readings.topics
        let stream: AsyncStream<MQTTMessage>
        do {
            stream = try client.subscribe([topics.fleetConfig, topics.config, topics.configSync], qos: .atLeastOnce)
        } catch {
            logger.error(
                "remote configuration: cannot subscribe to \(topics.fleetConfig), \(topics.config) and \(topics.configSync): \(error)"
            )
            return []
        }
        return [
            Task { [self] in
                for await message in stream {
                    // Exact topic match: `config/state` is not under `config` (MQTT filters match whole levels).
                    switch message.topic {
                    case topics.fleetConfig: receiveConfiguration(.fleet, payload: message.payload)
                    case topics.config: receiveConfiguration(.gateway, payload: message.payload)
                    case topics.configSync:
                        if state.withLock({ $0.retainedSync.received(message.payload) }) {
                            configurationProgress.signal()
                        }
                    default: continue
                    }
                }
            }
        ]
    }

    /// On each connection until the barrier is passed: the nonce, sent after the subscriptions (they go out with
    /// the CONNACK, this after it), so the broker routes it back behind the retained documents.
    func publishRetainedConfigurationSync() {
        guard configuration.remoteConfig.enabled, let payload = state.withLock({ $0.retainedSync.payload }) else {
            return
        }
        let message = MQTTMessage(topic: readings.topics.configSync, payload: payload, qos: .atLeastOnce, retain: false)
        client.submit(message) { [logger] result in
            if case .failure(let error) = result {
                logger.warning("remote configuration: the start-up sync message was not accepted: \(error)")
            }
        }
    }

    /// Until the broker's retained documents are applied (the sync nonce came back), or `remote_config.startup_wait_s`
    /// passed: no broker, or one that does not return the nonce (its ACL refuses `config/sync`).
    func awaitRetainedConfiguration() async {
        guard configuration.remoteConfig.enabled, configuration.remoteConfig.startupWaitSeconds > 0 else { return }
        let wait = configuration.remoteConfig.startupWaitSeconds
        let deadline = clock.now() + .seconds(wait)
        // Woken by the nonce's return (`configurationProgress`); the deadline bounds the wait.
        while clock.now() < deadline, !Task.isCancelled {
            if state.withLock({ $0.retainedSync == .returned }) { return }
            await configurationProgress.wait(upTo: deadline - clock.now(), clock: clock)
        }
        guard !Task.isCancelled else { return }
        let layers = remote.layersInForce
        if state.withLock({ $0.connectedOnce }) {
            logger.warning(
                """
                remote configuration: the start-up sync on \(readings.topics.configSync) did not come back within \
                \(wait) s (does the broker's ACL let this gateway write and read it? deploy/mosquitto/blegateway.acl); \
                scanning with what arrived so far, layers \(layers)
                """)
        } else {
            logger.warning(
                "remote configuration: no broker within \(wait) s; scanning with the file and stored layers \(layers)")
        }
    }

    /// One document from the broker: validated, applied if accepted, reported either way.
    ///
    /// The fleet and gateway documents arrive on two subscriptions at once; each verdict, the configuration it puts in
    /// force and its report happen together, one document at a time, or an older verdict's configuration could
    /// overwrite a newer one (the gateway's document applied after the fleet's, without it).
    func receiveConfiguration(_ layer: RemoteConfigLayer, payload: [UInt8]) {
        applying.withLock { _ in receiveConfigurationAlone(layer, payload: payload) }
    }

    private func receiveConfigurationAlone(_ layer: RemoteConfigLayer, payload: [UInt8]) {
        defer { configurationProgress.signal() }
        guard let outcome = remote.receive(layer, payload: payload) else { return }
        if outcome.status != .rejected {
            let c = outcome.effective
            let before = inForce.withLock { current in
                defer { current = c }
                return current
            }
            applyLive(from: before, to: c, start: false)
            tickerWake.signal()
            if before.peripherals != c.peripherals || before.connections != c.connections {
                peripherals.update(intents: c.peripherals, connections: c.connections)
            }
            // Regions, peripherals or the section itself may have changed what Home Assistant is told.
            announceToHomeAssistant(c)
        }
        switch outcome.status {
        case .applied:
            logger.info(
                "remote configuration: \(layer) document\(outcome.version.map { " version \($0)" } ?? "") applied")
        case .cleared:
            let tombstone = outcome.version.map { " by a signed tombstone, version \($0)" } ?? ""
            logger.info("remote configuration: \(layer) document deleted\(tombstone); back to the layers below it")
        case .rejected:
            let why = outcome.errors.prefix(5).map(\.description).joined(separator: "; ")
            logger.error("remote configuration: \(layer) document rejected: \(why)")
        }
        for w in outcome.warnings { logger.warning("remote configuration: \(layer): \(w)") }
        reportConfiguration(outcome)
    }

    /// Publishes the verdict on `config/state` through the spool (durable, in the seq stream, retained).
    func reportConfiguration(_ outcome: RemoteConfigController.Outcome) {
        guard configuration.remoteConfig.enabled else { return }
        let effective = inForce.withLock { $0 }
        recordState(
            readings.configState(
                outcome, hash: effective.effectiveHash, layers: remote.versions,
                signedOnly: remote.signedOnly, floors: remote.floors,
                restartRequired: restartRequired(effective), ts: clock.unixTime(),
                synced: clockSynchronized()))
    }

    /// A new configuration in force, for the pipeline (Pipeline/SightingPipeline.swift: its settings replaced, the
    /// ranging engine and region monitor built again only if theirs changed) and what it means for the topics:
    /// new and changed regions start `unknown` and are published so; removed ones get a retained `removed` state
    /// (docs/TOPICS.md). New scan parameters go to the source, which restarts only its scanner. `start`: the stored
    /// layers over the file, before the first scan.
    func applyLive(from before: GatewayConfiguration, to c: GatewayConfiguration, start: Bool) {
        let now = clock.now()
        let regionsChanged = before.regions != c.regions
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        let ids = Set(c.regions.map(\.id))
        let kept = Set(before.regions.filter { c.regions.contains($0) }.map(\.id))
        pipeline.withLock { p in
            p.reconfigure(from: before, to: c, at: now)
            guard regionsChanged else { return }
            // Recorded under the pipeline's lock, so an enter the new monitor reports for a new region (observe takes
            // the same lock) follows its `unknown` in the seq stream. (A removed region's last event from the old
            // monitor, taken just before this and published just after, could still follow its `removed`.)
            for r in c.regions where !kept.contains(r.id) {
                recordState(
                    readings.region(
                        r.id, state: .unknown, since: ts, event: .determined, beacon: nil, ts: ts,
                        synced: synced))
            }
            for r in before.regions where !ids.contains(r.id) {
                recordState(readings.regionRemoved(r.id, ts: ts, synced: synced))
            }
        }
        if regionsChanged {
            logger.info("regions: \(c.regions.count) in force (\(c.regions.count - kept.count) new or changed)")
        }
        applyScan(from: before, to: c)
    }

    private func applyScan(from before: GatewayConfiguration, to c: GatewayConfiguration) {
        if before.scan.active != c.scan.active || before.scan.intervalMS != c.scan.intervalMS
            || before.scan.windowMS != c.scan.windowMS, let source = source as? any ScanParametersUpdatable
        {
            source.updateScan(c.scan)
        }
    }

    /// Scan parameters are set on the controller when a scanner starts: a source that takes them while running
    /// (ScanParametersUpdatable: HCISightingSource) restarts its scanner, anything else waits for a restart of the
    /// gateway. Filters apply at once (the runtime filters).
    func restartRequired(_ effective: GatewayConfiguration) -> [String] {
        if let s = source as? any ScanParametersUpdatable, s.appliesScanParametersLive { return [] }
        var out: [String] = []
        if effective.scan.active != configuration.scan.active { out.append("scan.active") }
        if effective.scan.intervalMS != configuration.scan.intervalMS { out.append("scan.interval_ms") }
        if effective.scan.windowMS != configuration.scan.windowMS { out.append("scan.window_ms") }
        return out
    }

    /// The configuration in force (local file with the remote layers over it).
    public var effectiveConfiguration: GatewayConfiguration { inForce.withLock { $0 } }
}

extension GatewayReadings {
    /// A region no longer configured: its retained topic says so (`state` and `event` `removed`), rather than
    /// keeping the last state of a region that is not monitored any more.
    func regionRemoved(_ id: String, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("region", id)
        o.string("state", "removed")
        o.number("since", ts)
        o.string("event", "removed")
        return Reading(
            .state, topic: topics.region(id), body: o.finished, qos: stateQoS, retain: true, ts: ts,
            clockSynchronized: synced, run: run)
    }
}
