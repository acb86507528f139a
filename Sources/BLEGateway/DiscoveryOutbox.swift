/// Home Assistant's discovery documents on their way to the broker: a pure state machine; the runtime publishes what
/// it returns and reports each outcome back.
///
/// The documents do not go through the spool. There they took a `seq` like every reading, but they are published
/// outside the gateway's prefix, so every consumer that follows the seq stream under the prefix (the fleet's model,
/// `/metrics`, `watch`) counted each as a reading lost. Nothing is lost by leaving the spool: each document is kept
/// here, per topic, until the broker acknowledges its newest payload, and sent again after every connection (the
/// announcer republishes every document then too, since a broker may have lost what it retained).
struct DiscoveryOutbox: Sendable, Equatable {
    /// One retained message to publish: a document, or an empty payload that removes one.
    struct Message: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
    }

    enum Connection: Sendable, Equatable {
        /// Not connected: documents wait.
        case offline
        /// Connected: documents go at once.
        case online
    }

    /// Per topic, the newest payload the broker has not acknowledged, and whether it was refused (0x87 and the like:
    /// an ACL that does not let the gateway write it), in which case it waits for the next connection or Home
    /// Assistant's birth message instead of being sent again at once.
    struct Entry: Sendable, Equatable {
        var payload: [UInt8]
        var refused: Bool
    }

    private(set) var connection = Connection.offline
    private(set) var entries: [String: Entry] = [:]
    /// Topics in the order they were first given, so documents go out in the order the announcer decided them.
    private var order: [String] = []
    /// Publishes the broker refused since start (counted once each, for the health topic).
    private(set) var refusals = 0
    /// A refusal episode is under way: from a refusal until the broker acknowledges a document again (across
    /// reconnections, which resend what was refused but fix nothing by themselves).
    private(set) var refusing = false

    /// Documents waiting (not yet acknowledged), refused ones included.
    var pending: Int { entries.count }
    /// Of them, those the broker refused.
    var refused: Int { entries.values.filter(\.refused).count }

    /// New documents from the announcer: kept, and returned to publish now when connected.
    mutating func enqueue(_ messages: [Message]) -> [Message] {
        for m in messages {
            if entries[m.topic] == nil { order.append(m.topic) }
            entries[m.topic] = Entry(payload: m.payload, refused: false)
        }
        return connection == .online ? messages : []
    }

    /// Connected (after the CONNACK): everything waiting goes, refused ones too (an operator may have fixed the ACL).
    mutating func connected() -> [Message] {
        connection = .online
        return order.compactMap { topic in
            guard var e = entries[topic] else { return nil }
            e.refused = false
            entries[topic] = e
            return Message(topic: topic, payload: e.payload)
        }
    }

    mutating func disconnected() { connection = .offline }

    /// The broker acknowledged `payload` on `topic`: done, unless a newer payload is already waiting for it.
    mutating func acknowledged(_ m: Message) {
        refusing = false
        guard entries[m.topic]?.payload == m.payload else { return }
        entries[m.topic] = nil
        order.removeAll { $0 == m.topic }
    }

    /// The broker refused it: it waits for the next connection. Returns true for the first refusal of an episode
    /// (once, for the log).
    mutating func refused(_ m: Message) -> Bool {
        guard var e = entries[m.topic], e.payload == m.payload else { return false }
        let first = !refusing
        refusing = true
        e.refused = true
        entries[m.topic] = e
        refusals += 1
        return first
    }
}
