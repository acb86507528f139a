import BLEPublishing
import BLETransport

/// MQTT 3.1.1 only: each family the gateway publishes is read back until it came back once (PublishEcho says why).
extension GatewayRuntime {
    /// The families read back, each with the filters that read it: each level the gateway publishes under its own
    /// topics (its status has StatusEcho), and, when it announces to Home Assistant, the discovery documents under its
    /// own node and the shared sensors' node (what the shipped ACL lets it read; a filter over every device's documents
    /// would also bring back every other device's).
    var readBackFamilies: [(family: String, filters: [String])] {
        let base = readings.topics.base
        var families = [
            "adapter", "adapters", "health", "beacons", "regions", "peripherals", "sensors", "raw", "config", "enrol",
        ].map { ("\(base)/\($0)", ["\(base)/\($0)/#"]) }
        let h = effectiveConfiguration.homeAssistant
        if h.enabled {
            let device = "\(h.discoveryPrefix)/device"
            let own = HomeAssistantDiscovery.nodeID(readings.topics.gatewayID)
            families.append((device, ["\(device)/\(own)/#", "\(device)/\(HomeAssistantDiscovery.sharedSensorNode)/#"]))
        }
        return families
    }

    /// What the publisher tells of each acknowledgement: the family's echo deadline may begin.
    static func readBackObserver(
        _ echo: Locked<PublishEcho>, changed: WakeSignal, clock: any BLEClock
    ) -> @Sendable (String, String) -> Void {
        { topic, family in
            let now = clock.now().seconds
            if echo.withLock({ $0.acknowledged(topic, family: family, now: now) }) { changed.signal() }
        }
    }

    /// An acknowledgement of a message the gateway sent outside the spool (Home Assistant's discovery documents).
    func readBackAcknowledged(_ topic: String) {
        guard configuration.mqtt.protocolVersion != 5 else { return }
        Self.readBackObserver(publishEcho, changed: publishEchoChanged, clock: clock)(
            topic, RefusalHolds.family(of: topic, base: readings.topics.base))
    }

    /// A CONNACK: each family to read back on this connection (PublishEcho.connected) subscribes now, before this
    /// connection publishes anything (the publisher is told of the connection after this), so the SUBSCRIBE goes out ahead of every publish it judges and the
    /// broker, which handles a connection's packets in order, holds the subscription before the family's first
    /// message. Waiting for the SUBACK instead would lose the race against the burst a connection starts with
    /// (discovery, the backlog). Each ends (UNSUBSCRIBE) once its echo came: no family's traffic comes back for
    /// longer than one message.
    func startReadBacks() {
        guard configuration.mqtt.protocolVersion != 5 else { return }
        let all = readBackFamilies
        let chosen = Set(publishEcho.withLock { $0.connected(all.map(\.family)) })
        let started = all.filter { chosen.contains($0.family) }.compactMap { family, filters -> Task<Void, Never>? in
            let stream: AsyncStream<MQTTMessage>
            // At QoS 0: one message is enough to judge, and a broker that keeps QoS 1 subscriptions as stored consumers
            // (NATS's JetStream) would make and drop one per family at every connection.
            do { stream = try client.subscribe(filters, qos: .atMostOnce, buffer: 64) } catch {
                logger.error("cannot read back \(filters): \(error)")
                return nil
            }
            publishEcho.withLock { $0.listening(family) }
            return Task { [self] in
                // Live deliveries only: a retained copy from before proves nothing about this connection.
                for await message in stream where !message.retain {
                    let (action, settled) = publishEcho.withLock {
                        ($0.received(message.topic, family: family), $0.settled(family))
                    }
                    if action == .clear(family: family) {
                        logger.notice(
                            "the broker delivers this gateway's \(family) again: its publishes are not denied")
                    }
                    if settled { break }
                }
            }
        }
        let previous = readBacks.withLock { r in
            defer { r = started }
            return r
        }
        for task in previous { task.cancel() }
    }

    /// The connection ended: its read-backs end (the next CONNACK starts them again); suspicions stay.
    func stopReadBacks() {
        guard configuration.mqtt.protocolVersion != 5 else { return }
        publishEcho.withLock { $0.disconnected() }
        endReadBacks()
    }

    /// Cancels the current connection's read-backs (ending each stream unsubscribes it).
    private func endReadBacks() {
        for task in readBacks.withLock({ r in
            defer { r = [] }
            return r
        }) { task.cancel() }
    }

    /// Waits out each family's echo deadline (woken when one begins, not by a timer); nil under MQTT 5.
    func publishEchoDeadlines() -> Task<Void, Never>? {
        guard configuration.mqtt.protocolVersion != 5 else { return nil }
        return Task { [self] in
            while !Task.isCancelled {
                guard let due = publishEcho.withLock({ $0.nextDeadline }) else {
                    await publishEchoChanged.wait()
                    continue
                }
                let now = clock.now().seconds
                if now < due {
                    await publishEchoChanged.wait(upTo: .seconds(due - now), clock: clock)
                    continue
                }
                for case .suspect(let family, let topic) in publishEcho.withLock({ $0.deadline(now: now) }) {
                    logger.warning(
                        """
                        the broker acknowledged \(topic) but never delivered it back within \(Self.statusEchoWait): \
                        under MQTT 3.1.1 this is how an ACL denies publishes (acknowledged, then dropped), so \
                        \(family) may be lost; check the broker's ACL (the gateway must also read what it writes) or \
                        use MQTT 5 (mqtt.protocol: 5), which refuses with a reason and loses nothing
                        """)
                }
            }
            endReadBacks()
        }
    }
}
