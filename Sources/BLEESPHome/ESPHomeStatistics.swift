/// The proxy's counters, as the gateway's health publishes them (`esphome_api` in docs/TOPICS.md). Every client
/// that went away on a fault, and every advertisement a client did not get, is counted here once.
public struct ESPHomeStatistics: Sendable, Equatable {
    public var clients = 0
    public var connectionsAccepted: UInt64 = 0
    /// Handshakes refused because the client's key is not ours.
    public var wrongKey: UInt64 = 0
    /// Connections closed for bytes that are not ESPHome's framing (bad indicator, bad varint, a frame over the
    /// limit, a frame that does not decrypt, a message that does not decode).
    public var protocolErrors: UInt64 = 0
    /// Messages of a type the proxy does not serve (logged, answered with nothing, as ESPHome does).
    public var unknownMessages: UInt64 = 0
    public var advertisementsSent: UInt64 = 0
    /// Advertisements a subscribed client was too far behind to be given (its backlog full).
    public var advertisementsDropped: UInt64 = 0
    /// Subscriptions refused because another client holds the one there is (as in ESPHome).
    public var subscriptionsRefused: UInt64 = 0
    /// Subscriptions refused because the client asked for parsed advertisements; this proxy sends raw ones only.
    public var parsedSubscriptionsRefused: UInt64 = 0
    /// Connections closed because the client left 256 replies unread: it keeps asking and does not read the answers.
    public var stalledClients: UInt64 = 0

    public init() {}
}
