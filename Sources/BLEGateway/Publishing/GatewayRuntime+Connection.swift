import BLEPublishing
import BLESpool
import Logging

/// The broker connection as the gateway lives it: each client event told to the status topic, the own-status echo,
/// Home Assistant, the ownership claims and the publisher, in that order; and the one way a state event is recorded.
extension GatewayRuntime {
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
                // As a URL, the form mqtt.brokers takes (the deploy check finds this line by it).
                let scheme = configuration.mqtt.broker.hasPrefix("mqtts://") ? "mqtts" : "mqtt"
                let broker = client.broker.map { "\(scheme)://\($0)" } ?? configuration.mqtt.broker
                logger.info("connected to \(broker) (session present: \(sessionPresent))")
                statusEchoConnected()
                // Before anything of this connection is published: each family's read-back is subscribed first.
                startReadBacks()
                // Online again: a retained status that overrides the last will's offline. It goes through the spool
                // like every state event, so it takes its place in the sequence.
                recordState(
                    readings.status(
                        online: true, reason: first ? nil : "reconnected", ts: clock.unixTime(),
                        synced: clockSynchronized()))
                ownership?.brokerConnected()
                publishRetainedConfigurationSync()
                homeAssistantConnected(reconnected: !first)
            case .disconnected(let error):
                if let error { logger.warning("broker connection lost: \(error)") }
                state.withLock { $0.echo.disconnected() }
                stopReadBacks()
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
}
