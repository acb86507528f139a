/// Home Assistant's discovery documents on their way to the broker: a pure state machine; the runtime publishes what
/// it returns and reports each outcome back.
///
/// The documents do not go through the spool. There they took a `seq` like every reading, but they are published
/// outside the gateway's prefix, so every consumer that follows the seq stream under the prefix (the fleet's model,
/// `/metrics`, `watch`) counted each as a reading lost. Nothing is lost by leaving the spool: each document is kept
/// here, per topic, until the broker acknowledges its newest payload, and sent again after every connection (the
/// announcer republishes every document then too, since a broker may have lost what it retained).
///
/// Two bounds keep it out of the readings' way and keep the broker's last word right:
/// - at most `quota` documents are with the broker at once: the client's window is the spool publisher's window plus
///   this quota, so a burst of discovery (a hundred sensors heard at start) never fills the window the readings use;
/// - at most one payload per topic is with the broker at once: a newer one waits for the older one's answer, so the
///   retained document the broker keeps is the newest, whatever order two callers submitted in.
struct DiscoveryOutbox: Sendable, Equatable {
    /// The documents with the broker at once, by default.
    static let defaultQuota = 16

    /// One retained message to publish: a document, or an empty payload that removes one.
    struct Message: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
    }

    /// A message handed out to publish, with the token its answer is reported with (an answer for a send of an earlier
    /// connection is told apart from one of this connection by it).
    struct Send: Sendable, Equatable {
        var message: Message
        var token: UInt64
    }

    enum Connection: Sendable, Equatable {
        /// Not connected: documents wait.
        case offline
        /// Connected: documents go, up to the quota.
        case online
    }

    /// Per topic, the newest payload the broker has not acknowledged, what of it is with the broker now, and whether
    /// it was refused (0x87 and the like: an ACL that does not let the gateway write it), in which case it waits for
    /// the next connection or Home Assistant's birth message instead of being sent again at once.
    struct Entry: Sendable, Equatable {
        var payload: [UInt8]
        var refused = false
        /// The send with the broker now: its token and payload (an older one than `payload` when a newer came since).
        var inFlight: (token: UInt64, payload: [UInt8])?

        static func == (a: Entry, b: Entry) -> Bool {
            a.payload == b.payload && a.refused == b.refused && a.inFlight?.token == b.inFlight?.token
                && a.inFlight?.payload == b.inFlight?.payload
        }
    }

    let quota: Int
    private(set) var connection = Connection.offline
    private(set) var entries: [String: Entry] = [:]
    /// Topics in the order they were first given, so documents go out in the order the announcer decided them.
    private var order: [String] = []
    private var nextToken: UInt64 = 0
    /// Publishes the broker refused since start (counted once each, for the health topic).
    private(set) var refusals = 0
    /// A refusal episode is under way: from a refusal until the broker acknowledges a document again (across
    /// reconnections, which resend what was refused but fix nothing by themselves).
    private(set) var refusing = false

    init(quota: Int = Self.defaultQuota) { self.quota = max(1, quota) }

    /// Documents waiting (not yet acknowledged), refused ones included.
    var pending: Int { entries.count }
    /// Of them, those the broker refused.
    var refused: Int { entries.values.filter(\.refused).count }
    /// Documents with the broker now.
    var inFlight: Int { entries.values.filter { $0.inFlight != nil }.count }

    /// New documents from the announcer: kept, and those that may go now returned (connected, within the quota).
    mutating func enqueue(_ messages: [Message]) -> [Send] {
        for m in messages {
            if entries[m.topic] == nil {
                order.append(m.topic)
                entries[m.topic] = Entry(payload: m.payload)
            } else {
                entries[m.topic]!.payload = m.payload
                entries[m.topic]!.refused = false
            }
        }
        return sendable()
    }

    /// Connected (after the CONNACK): what waits goes, refused documents too (an operator may have fixed the ACL).
    /// Whatever was with the broker on the last connection is sent again.
    mutating func connected() -> [Send] {
        connection = .online
        for topic in order {
            entries[topic]?.refused = false
            entries[topic]?.inFlight = nil
        }
        return sendable()
    }

    /// The connection ended: what was with the broker fails (each answer, when it comes, is for a token no longer
    /// current) and goes again at the next connection.
    mutating func disconnected() {
        connection = .offline
        for topic in order { entries[topic]?.inFlight = nil }
    }

    /// The broker acknowledged a send: done with its topic, unless a newer payload waits for it (which goes now).
    mutating func acknowledged(_ send: Send) -> [Send] {
        refusing = false
        guard let e = entries[send.message.topic], e.inFlight?.token == send.token else { return sendable() }
        if e.payload == send.message.payload {
            entries[send.message.topic] = nil
            order.removeAll { $0 == send.message.topic }
        } else {
            entries[send.message.topic]!.inFlight = nil
        }
        return sendable()
    }

    /// The broker refused a send: its document waits for the next connection (or Home Assistant's birth message).
    /// Returns whether this is the first refusal of an episode (once, for the log), and what may go now.
    mutating func refused(_ send: Send) -> (began: Bool, next: [Send]) {
        guard var e = entries[send.message.topic], e.inFlight?.token == send.token else {
            return (false, sendable())
        }
        e.inFlight = nil
        refusals += 1
        let began = !refusing
        refusing = true
        // A newer payload than the refused one is not refused yet: the broker has not seen it.
        if e.payload == send.message.payload { e.refused = true }
        entries[send.message.topic] = e
        return (began, sendable())
    }

    /// A send failed without the broker's answer (the connection ended, or the client's window was full): its
    /// document stays, and goes again at the next answer, enqueue or connection, whichever comes first. Not sent
    /// again from here, which would spin against a full window.
    mutating func failed(_ send: Send) {
        guard entries[send.message.topic]?.inFlight?.token == send.token else { return }
        entries[send.message.topic]!.inFlight = nil
    }

    /// Connected and within the quota: the next documents waiting, in order, one per topic.
    private mutating func sendable() -> [Send] {
        guard connection == .online else { return [] }
        var busy = inFlight
        var out: [Send] = []
        for topic in order where busy < quota {
            guard var e = entries[topic], e.inFlight == nil, !e.refused else { continue }
            nextToken += 1
            e.inFlight = (nextToken, e.payload)
            entries[topic] = e
            busy += 1
            out.append(Send(message: Message(topic: topic, payload: e.payload), token: nextToken))
        }
        return out
    }
}
