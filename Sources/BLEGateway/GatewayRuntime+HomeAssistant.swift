import BLEConfiguration
import BLEHCI
import BLEPublishing
import BLESpool
import BLETransport

/// The running gateway's side of Home Assistant discovery (HomeAssistantAnnouncer decides, this carries it out):
/// every document is a retained state reading through the spool like any other, so a broker outage loses none and
/// Home Assistant's absence costs nothing — the documents wait, retained, until it subscribes.
extension GatewayRuntime {
    struct HomeAssistantLink: Sendable {
        var announcer: HomeAssistantAnnouncer
        /// `<prefix>/status` followers, one per discovery prefix that has been in force (a live change of prefix
        /// adds one; the old one's messages are then ignored).
        var followers: [String: Task<Void, Never>] = [:]
    }

    /// At start and after every change of the configuration in force: what changed is published or removed.
    func announceToHomeAssistant(_ c: GatewayConfiguration) {
        let (prefix, announced, refused, newlyRefused) = homeAssistant.withLock { h in
            let before = h.announcer.refusedDevices
            // Recorded under the lock, so two changes in a row reach the spool in the order they were decided.
            record(h.announcer.configure(c))
            return (
                h.announcer.prefix, h.announcer.announcedDevices, h.announcer.refusedDevices,
                h.announcer.refusedDevices > before
            )
        }
        if newlyRefused {
            logger.warning(
                "homeassistant: \(refused) devices not announced (max_devices \(c.homeAssistant.maxDevices) reached)")
        }
        if let prefix {
            logger.debug("homeassistant: \(announced) devices announced under \(prefix)/device/")
            followHomeAssistantStatus(prefix)
        }
    }

    /// Home Assistant publishes `online` on `<prefix>/status` whenever it (re)connects: it may have forgotten what it
    /// knew, so every document goes again (Home Assistant ignores a document that did not change).
    private func followHomeAssistantStatus(_ prefix: String) {
        let topic = "\(prefix)/status"
        homeAssistant.withLock { h in
            guard h.followers[prefix] == nil else { return }
            let stream: AsyncStream<MQTTMessage>
            do {
                stream = try client.subscribe(topic, qos: .atLeastOnce)
            } catch {
                logger.error("homeassistant: cannot subscribe to \(topic): \(error)")
                return
            }
            // What earlier runs left retained under this prefix: the broker sends it once, on subscribing. Its own
            // node first; then the node-less topics earlier versions used (a broker's ACL may not let it read those).
            var streams: [AsyncStream<MQTTMessage>] = []
            for filter in [
                "\(prefix)/device/\(HomeAssistantDiscovery.nodeID(readings.topics.gatewayID))/+/config",
                "\(prefix)/device/+/config",
            ] {
                do {
                    streams.append(try client.subscribe(filter, qos: .atLeastOnce))
                } catch {
                    logger.error("homeassistant: cannot subscribe to \(filter): \(error)")
                }
            }
            h.followers[prefix] = Task { [self] in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { [self] in
                        for await message in stream
                        where message.topic == topic
                            && message.payload == Array("online".utf8)
                        {
                            homeAssistant.withLock { h in
                                guard h.announcer.prefix == prefix else { return }
                                logger.info("homeassistant: Home Assistant is online; discovery published again")
                                record(h.announcer.homeAssistantOnline())
                            }
                        }
                    }
                    for documents in streams {
                        group.addTask { [self] in
                            for await message in documents where message.retain {
                                homeAssistant.withLock { h in
                                    let stale = h.announcer.retainedDocument(
                                        topic: message.topic,
                                        payload: message.payload)
                                    if !stale.isEmpty {
                                        logger.info("homeassistant: \(message.topic) from an earlier run removed")
                                    }
                                    record(stale)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// A peripheral's link state changed: a device taken by a name or service entry becomes a device in Home
    /// Assistant the first time (the announcer ignores the ones it knows).
    func peripheralSeen(_ address: BDAddress) {
        guard let intent = peripherals.intent(for: address) else { return }
        if case .address = intent.match { return }
        homeAssistant.withLock { h in record(h.announcer.deviceFound(address, intent: intent)) }
    }

    /// A sensor reading went to the spool: a sensor (or a quantity) not announced yet is, after that reading, so
    /// Home Assistant's entity finds the value when it subscribes.
    func announceSensorToHomeAssistant(_ address: BDAddress, model: String, keys: [String]) {
        guard !keys.isEmpty else { return }
        homeAssistant.withLock { h in record(h.announcer.sensorHeard(address, model: model, keys: keys)) }
    }

    /// After a reconnection: every document again. A broker that restarted without persistence (or a failover to
    /// another) has lost the retained documents, and Home Assistant's birth message may have come before the
    /// gateway subscribed again; without this, Home Assistant's next restart would find nothing to discover.
    func republishToHomeAssistant() {
        homeAssistant.withLock { h in record(h.announcer.homeAssistantOnline()) }
    }

    private func record(_ messages: [HomeAssistantAnnouncer.Message]) {
        guard !messages.isEmpty else { return }
        let ts = clock.unixTime()
        let synced = clockSynchronized()
        for m in messages {
            recordState(
                Reading(
                    .state, topic: m.topic, body: PayloadEnvelope.verbatim(m.payload),
                    qos: readings.stateQoS, retain: true, ts: ts, clockSynchronized: synced, run: readings.run))
        }
    }

    /// Ends the `<prefix>/status` followers (at shutdown, after the spool has been drained).
    func stopFollowingHomeAssistant() async {
        let tasks = homeAssistant.withLock { h in
            defer { h.followers = [:] }
            return Array(h.followers.values)
        }
        for t in tasks {
            t.cancel()
            await t.value
        }
    }

    /// For the health topic: devices announced and devices left out by `max_devices`, while discovery is on.
    var homeAssistantCounts: (devices: Int, refused: Int)? {
        homeAssistant.withLock { h in
            h.announcer.prefix == nil ? nil : (h.announcer.announcedDevices, h.announcer.refusedDevices)
        }
    }
}
