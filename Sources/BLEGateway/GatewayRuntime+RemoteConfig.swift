import BLEDomain
import BLEPublishing
import Foundation

/// The running gateway's side of remote configuration: subscribe to the fleet and per-gateway topics, apply what
/// is accepted without a restart, and report every verdict on `config/state`.
extension GatewayRuntime {
    /// Subscribes to both config topics (before the client connects, so the retained documents are the first thing
    /// the broker sends after SUBACK) and follows them until cancelled. Returns the followers' tasks.
    func followRemoteConfiguration() -> [Task<Void, Never>] {
        guard configuration.remoteConfig.enabled else { return [] }
        var tasks: [Task<Void, Never>] = []
        for (layer, topic) in [(RemoteConfigController.Layer.fleet, readings.topics.fleetConfig),
                               (.gateway, readings.topics.config)] {
            let stream: AsyncStream<MQTTMessage>
            do {
                stream = try client.subscribe(topic, qos: .atLeastOnce)
            } catch {
                logger.error("remote configuration: cannot subscribe to \(topic): \(error)")
                continue
            }
            tasks.append(Task { [self] in
                for await message in stream {
                    // Exact topic match: `config/state` is not under `config` (MQTT filters match whole levels).
                    guard message.topic == topic else { continue }
                    receiveConfiguration(layer, payload: message.payload)
                }
            })
        }
        return tasks
    }

    /// Until the broker's retained documents had their chance: up to `remote_config.startup_wait_s`, ending early
    /// once both layers arrived or 500 ms after the connection was accepted (retained messages follow SUBACK at
    /// once; a topic with none sends nothing, so some settle time is the only way to know).
    func awaitRetainedConfiguration() async {
        guard configuration.remoteConfig.enabled, configuration.remoteConfig.startupWaitSeconds > 0 else { return }
        let deadline = clock.now() + .seconds(configuration.remoteConfig.startupWaitSeconds)
        var connectedAt: Duration?
        while clock.now() < deadline, !Task.isCancelled {
            if connectedAt == nil, state.withLock({ $0.connectedOnce }) { connectedAt = clock.now() }
            if let at = connectedAt {
                if remote.seenLayers.count == 2 || clock.now() - at >= .milliseconds(500) { break }
            }
            do { try await clock.sleep(for: .milliseconds(20)) } catch { return }
        }
        if connectedAt == nil {
            let wait = configuration.remoteConfig.startupWaitSeconds
            let layers = remote.layersInForce
            logger.warning(
                "remote configuration: no broker within \(wait) s; scanning with the file and stored layers \(layers)")
        }
    }

    /// One document from the broker: validated, applied if accepted, reported either way.
    func receiveConfiguration(_ layer: RemoteConfigController.Layer, payload: [UInt8]) {
        guard let outcome = remote.receive(layer, payload: payload) else { return }
        if outcome.status != .rejected {
            let c = outcome.effective
            live.withLock { l in
                l.configuration = c
                if let f = try? ScanFilter(parsing: c.scan.filters) { l.filter = f }
            }
        }
        switch outcome.status {
        case .applied:
            logger.info("remote configuration: \(layer) document\(outcome.version.map { " version \($0)" } ?? "") applied")
        case .cleared:
            logger.info("remote configuration: \(layer) document deleted; back to the layers below it")
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
        let effective = live.withLock { $0.configuration }
        recordState(readings.configState(outcome, hash: effective.effectiveHash, layers: remote.versions,
                                         restartRequired: restartRequired(effective), ts: clock.unixTime(),
                                         synced: clockSynchronized()))
    }

    /// Scan parameters are set on the controller when the source starts; the source is built once from the local
    /// file, so changed parameters wait for a restart of the gateway. Filters apply at once (the runtime filters).
    func restartRequired(_ effective: GatewayConfiguration) -> [String] {
        var out: [String] = []
        if effective.scan.active != configuration.scan.active { out.append("scan.active") }
        if effective.scan.intervalMS != configuration.scan.intervalMS { out.append("scan.interval_ms") }
        if effective.scan.windowMS != configuration.scan.windowMS { out.append("scan.window_ms") }
        return out
    }

    /// The configuration in force (local file with the remote layers over it).
    public var effectiveConfiguration: GatewayConfiguration { live.withLock { $0.configuration } }
}

extension GatewayRuntime {
    /// The verifier for `remote_config.public_key_file`, or nil when signatures are off.
    static func configVerifier(_ c: GatewayConfiguration) throws -> ConfigSigning.Verifier? {
        guard let path = c.remoteConfig.publicKeyFile else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(path: "remote_config.public_key_file", "cannot read \(path)")
        }
        return try ConfigSigning.Verifier(publicKey: String(decoding: data, as: UTF8.self))
    }
}
