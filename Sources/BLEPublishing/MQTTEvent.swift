/// What happened to the connection, in order, on `MQTTClient.events`.
public enum MQTTEvent: Sendable, Equatable {
    /// Connection attempt `attempt` (1-based, reset after a successful CONNACK) to `broker` has begun.
    case connecting(attempt: Int, broker: MQTTConfiguration.Broker)
    /// CONNACK accepted; `sessionPresent` is the broker's Session Present flag (§3.2.2.1.1).
    case connected(sessionPresent: Bool)
    /// CONNACK refused (bad credentials, not authorised, …): the error carries the return/reason code and name.
    case connectionRefused(MQTTError)
    /// No CONNACK at all: TCP or TLS failed, or the broker closed the socket first.
    case connectionFailed(MQTTError)
    /// An established connection ended; `nil` when we ended it (graceful stop).
    case disconnected(MQTTError?)
    /// `count` publishes were failed with `.notAcknowledged` because their connection ended.
    case unacknowledged(count: Int)
    /// The next attempt waits `delay` (exponential backoff with jitter).
    case backingOff(delay: Duration)
}
