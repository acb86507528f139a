/// Which broker of `MQTTConfiguration.brokers` each connection attempt dials, and which one the client is on.
/// Pure: `MQTTClient.run()` asks it before each attempt and tells it how the attempt went.
///
/// Every attempt after one that ended (refused, failed, or a connection lost) dials another broker: a node that
/// died or that the network cut off from us answers no sooner for being asked again, and a cluster that keeps
/// sessions and retained messages across its nodes (docs/DEPLOY.md) takes the gateway anywhere. A single broker is
/// a list of one, dialled every time. No attempt returns to the first broker while the connection holds: a
/// connection that works is not given up for a preference.
struct BrokerRotation: Sendable {
    enum Phase: Sendable, Equatable {
        /// Between attempts: the next one dials `next`.
        case between(next: Int)
        /// An attempt to `index` is under way: no CONNACK accepted yet.
        case dialling(index: Int)
        /// The broker at `index` accepted the connection.
        case connected(index: Int)
    }

    let brokers: [MQTTConfiguration.Broker]
    let failover: MQTTConfiguration.Failover
    private(set) var phase: Phase
    /// The broker that accepted the last connection, for telling a failover from a reconnection.
    private var lastAccepted: Int?
    /// Connections accepted by another broker than the one before.
    private(set) var failovers = 0

    /// At random, the first broker is drawn too, so that a fleet started together spreads over the nodes.
    init<R: RandomNumberGenerator>(
        _ brokers: [MQTTConfiguration.Broker], failover: MQTTConfiguration.Failover, using random: inout R
    ) {
        precondition(!brokers.isEmpty, "a client needs a broker")
        self.brokers = brokers
        self.failover = failover
        let first = failover == .random ? Int.random(in: 0..<brokers.count, using: &random) : 0
        phase = .between(next: first)
    }

    /// The broker the client is connected to now.
    var current: MQTTConfiguration.Broker? {
        if case .connected(let index) = phase { return brokers[index] }
        return nil
    }

    /// An attempt starts: the broker it dials.
    mutating func dial() -> MQTTConfiguration.Broker {
        let index: Int
        switch phase {
        case .between(let next): index = next
        // `end` was not told of the last attempt (it could not start): it is made again on the same broker.
        case .dialling(let i), .connected(let i): index = i
        }
        phase = .dialling(index: index)
        return brokers[index]
    }

    /// The broker accepted the attempt's CONNECT.
    mutating func accepted() {
        guard case .dialling(let index) = phase else { return }
        if let last = lastAccepted, last != index { failovers += 1 }
        lastAccepted = index
        phase = .connected(index: index)
    }

    /// The attempt ended, accepted or not: the next one dials another broker.
    mutating func ended<R: RandomNumberGenerator>(using random: inout R) {
        let index: Int
        switch phase {
        case .between: return
        case .dialling(let i), .connected(let i): index = i
        }
        guard brokers.count > 1 else {
            phase = .between(next: index)
            return
        }
        switch failover {
        case .inOrder:
            phase = .between(next: (index + 1) % brokers.count)
        case .random:
            // Any other broker, each as likely.
            let draw = Int.random(in: 0..<(brokers.count - 1), using: &random)
            phase = .between(next: draw >= index ? draw + 1 : draw)
        }
    }
}
