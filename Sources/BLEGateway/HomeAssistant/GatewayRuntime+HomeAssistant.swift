import BLEConfiguration
import BLEHCI
import BLEPublishing
import BLESpool
import BLETransport

/// The running gateway's side of Home Assistant discovery (HomeAssistantAnnouncer decides, this carries it out): every
/// document is published retained, kept in the `DiscoveryOutbox` until the broker acknowledges it and sent again after
/// every connection, so a broker outage loses none and Home Assistant's absence costs nothing — the documents wait,
/// retained, until it subscribes. They take no seq (they are outside the prefix; see DiscoveryOutbox).
extension GatewayRuntime {
    struct HomeAssistantLink: Sendable {
        var announcer: HomeAssistantAnnouncer
        var outbox = DiscoveryOutbox()
        /// `<prefix>/status` followers, one per discovery prefix that has been in force (a live change of prefix
        /// adds one; the old one's messages are then ignored).
        var followers: [String: Task<Void, Never>] = [:]
    }

    /// At start and after every change of the configuration in force: what changed is published or removed.
    func announceToHomeAssistant(_ c: GatewayConfiguration) {
        let (prefix, announced, refused, newlyRefused, sends) = homeAssistant.withLock { h in
            let before = h.announcer.refusedDevices
            // Handed over under the lock, so two changes in a row reach the broker in the order they were decided.
            let sends = h.outbox.enqueue(Self.outgoing(h.announcer.configure(c)))
            return (
                h.announcer.prefix, h.announcer.announcedDevices, h.announcer.refusedDevices,
                h.announcer.refusedDevices > before, sends
            )
        }
        publishDiscovery(sends)
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
                "\(prefix)/device/\(HomeAssistantDiscovery.sharedSensorNode)/+/config",
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
                            publishDiscovery(
                                homeAssistant.withLock { h in
                                    guard h.announcer.prefix == prefix else { return [] }
                                    logger.info("homeassistant: Home Assistant is online; discovery published again")
                                    return h.outbox.enqueue(Self.outgoing(h.announcer.homeAssistantOnline()))
                                })
                        }
                    }
                    for documents in streams {
                        group.addTask { [self] in
                            for await message in documents {
                                publishDiscovery(
                                    homeAssistant.withLock { h in
                                        // The sensors' shared documents, retained or published now by another
                                        // gateway: their quantities join this gateway's.
                                        if HomeAssistantAnnouncer.isShared(message.topic) {
                                            return h.outbox.enqueue(
                                                Self.outgoing(
                                                    h.announcer.sharedSensorDocument(
                                                        topic: message.topic, payload: message.payload)))
                                        }
                                        guard message.retain else { return [] }
                                        let stale = h.announcer.retainedDocument(
                                            topic: message.topic,
                                            payload: message.payload)
                                        if !stale.isEmpty {
                                            logger.info("homeassistant: \(message.topic) from an earlier run removed")
                                        }
                                        return h.outbox.enqueue(Self.outgoing(stale))
                                    })
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
        publishDiscovery(
            homeAssistant.withLock { h in
                h.outbox.enqueue(Self.outgoing(h.announcer.deviceFound(address, intent: intent)))
            })
    }

    /// A sensor reading went to the spool: a sensor (or a quantity) not announced yet is, after that reading, so
    /// Home Assistant's entity finds the value when it subscribes.
    func announceSensorToHomeAssistant(_ address: BDAddress, model: String, keys: [String]) {
        guard !keys.isEmpty else { return }
        publishDiscovery(
            homeAssistant.withLock { h in
                h.outbox.enqueue(Self.outgoing(h.announcer.sensorHeard(address, model: model, keys: keys)))
            })
    }

    /// Connected: what waits goes, and after a reconnection every document again. A broker that restarted without
    /// persistence (or a failover to another) has lost the retained documents, and Home Assistant's birth message may
    /// have come before the gateway subscribed again; without this, Home Assistant's next restart would find nothing
    /// to discover.
    func homeAssistantConnected(reconnected: Bool) {
        publishDiscovery(
            homeAssistant.withLock { h in
                // What waits (removals and tombstones too) first, then every document again, in one step: a topic
                // already on its way is not sent twice, and a newer payload for it follows the answer.
                var sends = h.outbox.connected()
                if reconnected { sends += h.outbox.enqueue(Self.outgoing(h.announcer.homeAssistantOnline())) }
                return sends
            })
    }

    func homeAssistantDisconnected() { homeAssistant.withLock { $0.outbox.disconnected() } }

    private static func outgoing(_ messages: [HomeAssistantAnnouncer.Message]) -> [DiscoveryOutbox.Message] {
        messages.map { DiscoveryOutbox.Message(topic: $0.topic, payload: $0.payload) }
    }

    /// Hands documents to the client (the outbox keeps one per topic with the broker, so their order across callers
    /// does not matter) and reports each outcome back, sending what the outbox lets go next.
    private func publishDiscovery(_ sends: [DiscoveryOutbox.Send]) {
        for send in sends {
            let m = send.message
            let message = MQTTMessage(
                topic: m.topic, payload: m.payload, qos: MQTTQoS(rawValue: Int(readings.stateQoS)) ?? .atLeastOnce,
                retain: true)
            client.submit(message) { [self] result in
                switch result {
                case .success:
                    readBackAcknowledged(m.topic)
                    publishDiscovery(homeAssistant.withLock { $0.outbox.acknowledged(send) })
                case .failure(let e)
                where e.kind == .reasonCode && MQTTReasonCode(rawValue: e.code).isFailure || e.isQoSNotSupported:
                    let (began, next) = homeAssistant.withLock { $0.outbox.refused(send) }
                    if began {
                        logger.error(
                            """
                            homeassistant: the broker refuses \(m.topic) (\(MQTTReasonCode(rawValue: e.code))): its ACL \
                            must let this gateway write homeassistant/device/<gateway id>/# \
                            (deploy/mosquitto/blegateway.acl); kept, sent again at the next connection
                            """)
                    }
                    publishDiscovery(next)
                case .failure:
                    // Not connected, or the connection ended, or the window was full: kept, sent again at the next
                    // answer or connection.
                    homeAssistant.withLock { $0.outbox.failed(send) }
                }
            }
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

    /// For the health topic, while discovery is on: devices announced, devices left out by `max_devices`, and the
    /// documents not yet acknowledged (of them, those the broker refused).
    var homeAssistantCounts: GatewayReadings.HomeAssistantCounts? {
        homeAssistant.withLock { h in
            h.announcer.prefix == nil
                ? nil
                : .init(
                    devices: h.announcer.announcedDevices, refusedDevices: h.announcer.refusedDevices,
                    pendingDocuments: h.outbox.pending, refusedDocuments: h.outbox.refused)
        }
    }
}
