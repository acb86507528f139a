/// Whether the broker has sent every retained configuration document it had at start.
///
/// MQTT says nothing when a topic holds no retained message, so "nothing came" cannot be told from "not yet". What
/// can: the gateway subscribes to its config topics and to `config/sync` in one stream, then publishes a nonce (fresh
/// at each start) to `config/sync` on each connection until it comes back. Mosquitto handles one connection's packets
/// in order and queues the retained documents a SUBSCRIBE finds while handling it, before it routes the later PUBLISH
/// back; so when the nonce comes out of the stream, every document before it has been applied. MQTT itself does not
/// promise that order: a broker that sends retained messages later could let the barrier pass first. Only a deadline
/// (`remote_config.startup_wait_s`) ends the wait otherwise: no broker, or one whose ACL refuses the sync topic.
enum RetainedConfigurationSync: Sendable, Equatable {
    /// Waiting for this nonce to come back.
    case awaiting(nonce: String)
    /// It came back: the retained documents are applied.
    case returned

    static func fresh() -> Self {
        .awaiting(nonce: String(UInt64.random(in: .min ... .max), radix: 16))
    }

    /// What to publish on a new connection (schema/v1/config-sync.json): nil once the barrier was passed.
    var payload: [UInt8]? {
        if case .awaiting(let nonce) = self { return Array(#"{"nonce":"\#(nonce)"}"#.utf8) }
        return nil
    }

    /// A message on the sync topic: true when it is our nonce (the barrier is passed now).
    mutating func received(_ payload: [UInt8]) -> Bool {
        guard let ours = self.payload, payload == ours else { return false }
        self = .returned
        return true
    }
}
