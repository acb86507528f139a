import BLEPublishing
import Foundation

/// MQTT 3.1.1 only: the gateway reads its own retained status back after each connection (StatusEcho says why).
extension GatewayRuntime {
    /// How long after a CONNACK the online status may take to come back before publishes are suspected denied.
    static let statusEchoWait: Duration = .seconds(10)

    /// Follows the gateway's own status topic and the deadline after each connection; nil under MQTT 5, whose
    /// brokers refuse a denied publish with 0x87 Not authorized.
    func followOwnStatus() -> Task<Void, Never>? {
        guard configuration.mqtt.protocolVersion != 5 else { return nil }
        let topic = readings.topics.status
        let stream: AsyncStream<MQTTMessage>
        do {
            stream = try client.subscribe(topic, qos: .atLeastOnce, buffer: 16)
        } catch {
            logger.error("cannot subscribe to the gateway's own status \(topic): \(error)")
            return nil
        }
        return Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in
                    for await message in stream where message.topic == topic {
                        let o = (try? JSONSerialization.jsonObject(with: Data(message.payload))) as? [String: Any]
                        let seq = (o?["seq"] as? NSNumber).map { $0.uint64Value }
                        let action = state.withLock {
                            $0.echo.received(
                                ownRun: o?["run"] as? String == readings.run, seq: seq,
                                online: o?["state"] as? String == "online")
                        }
                        if action == .clear {
                            logger.notice(
                                "the broker delivers this gateway's own status again: publishes are not denied")
                        }
                    }
                }
                group.addTask { [self] in await statusEchoDeadlines() }
                await group.waitForAll()
            }
        }
    }

    /// Waits out the echo's deadline after each connection (woken by the connection, not by a timer).
    private func statusEchoDeadlines() async {
        while !Task.isCancelled {
            guard case .awaiting(_, let since) = state.withLock({ $0.echo.state }) else {
                await statusEchoChanged.wait()
                continue
            }
            let due = Duration.seconds(since) + Self.statusEchoWait
            if clock.now() < due {
                await statusEchoChanged.wait(upTo: due - clock.now(), clock: clock)
                continue
            }
            let action = state.withLock { $0.echo.deadline(connectedAt: since, now: clock.now().seconds) }
            if action == .suspect {
                logger.warning(
                    """
                    the broker acknowledged this gateway's online status but never delivered it back within \
                    \(Self.statusEchoWait): under MQTT 3.1.1 this is how an ACL denies publishes (acknowledged, then \
                    dropped), so readings may be lost; check the broker's ACL (the gateway must also read its own \
                    status) or use MQTT 5 (mqtt.protocol: 5), which refuses with a reason and loses nothing
                    """)
            }
        }
    }

    /// A CONNACK under MQTT 3.1.1: the online status about to be recorded gets a seq above the spool's last.
    func statusEchoConnected() {
        guard configuration.mqtt.protocolVersion != 5 else { return }
        let last = spool.statistics.lastSeq
        state.withLock { $0.echo.connected(lastSeq: last, now: clock.now().seconds) }
        statusEchoChanged.signal()
    }
}
