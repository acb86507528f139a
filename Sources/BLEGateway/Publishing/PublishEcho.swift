/// StatusEcho's reason, for every family of topics the gateway publishes: under MQTT 3.1.1 an ACL that denies one
/// family (Home Assistant's discovery, the readings) while it allows the status is acknowledged and dropped as
/// silently. So the gateway reads back one of its own messages per family: the first one the broker acknowledged
/// after the read-back subscribed must come back on it within the wait; a family whose message never does is reported
/// (`health.publish.denied_suspected_families`) and logged once per episode. A family is `RefusalHolds.family`
/// (`<prefix>/<gateway>/<level>`, or the first two levels outside it).
///
/// Which families are read back at a connection (`connected`): all of them at the first; later, those published in
/// this run and not yet confirmed, and every suspected one. A family confirmed once is not read back again in the
/// run: each SUBSCRIBE and UNSUBSCRIBE of a persistent session is a stored write on some brokers (NATS keeps sessions
/// in a replicated stream), and ten gateways doing that for every family at every failover starved the cluster.
///
/// Pure: events in, what to report out; the runtime subscribes, ends each read-back once it echoed (so no family's
/// traffic comes back for longer than one message), schedules the deadline and logs.
struct PublishEcho: Sendable, Equatable {
    enum Watch: Sendable, Equatable {
        /// Its read-back subscription was sent on this connection, ahead of anything published on it; nothing of the
        /// family acknowledged since.
        case listening
        /// `topic`, acknowledged at `since`, has not come back yet.
        case awaiting(topic: String, since: Double)
        /// It came back (on this connection or an earlier one of the run).
        case confirmed
        /// It did not come back within the wait. Kept across reconnections until a message of the family comes back;
        /// `topic` is the one awaited again once the read-back listens (nil until a message is acknowledged).
        case suspected(since: Double, topic: String?, listening: Bool)
    }

    enum Action: Sendable, Equatable {
        /// The family's echo did not come: log once, report in health.
        case suspect(family: String, topic: String)
        /// It came after a suspicion: log that it is over.
        case clear(family: String)
    }

    let wait: Double
    /// Families watched on this connection, and suspicions carried over. A family is absent until its read-back
    /// subscription is sent.
    private(set) var watches: [String: Watch] = [:]
    /// Topics each listening family delivered live before one of its messages was acknowledged: a broker may send a
    /// message on to its subscribers before its PUBACK goes back, so an echo can come before its acknowledgement.
    /// At most `earlyLimit` per family (the window is one round trip).
    private var early: [String: Set<String>] = [:]
    static let earlyLimit = 256
    /// Episodes begun (each logged once).
    private(set) var episodes = 0
    /// Families the broker acknowledged a message of in this run, and connections begun.
    private(set) var published: Set<String> = []
    private(set) var connections = 0

    init(wait: Double) { self.wait = wait }

    /// The families suspected now, sorted.
    var suspected: [String] {
        watches.compactMap { if case .suspected = $0.value { $0.key } else { nil } }.sorted()
    }

    /// When the earliest awaited echo is due.
    var nextDeadline: Double? {
        watches.values.compactMap { if case .awaiting(_, let since) = $0 { since + wait } else { nil } }.min()
    }

    /// A connection begins: of `families`, those to read back on it (see the type's comment).
    mutating func connected(_ families: [String]) -> [String] {
        connections += 1
        return families.filter { family in
            switch watches[family] {
            case .confirmed: false
            case .suspected: true
            default: connections == 1 || published.contains(family)
            }
        }
    }

    /// The connection ended: what was being watched is watched again when the family is next read back; a
    /// confirmation and a suspicion stay.
    mutating func disconnected() {
        early = [:]
        watches = watches.compactMapValues { w -> Watch? in
            switch w {
            case .confirmed: return .confirmed
            // A suspicion is judged again by the first message acknowledged on the next connection.
            case .suspected(let since, _, _): return .suspected(since: since, topic: nil, listening: false)
            default: return nil
            }
        }
    }

    /// The subscription that reads `family` back went out on this connection, before anything it judges.
    mutating func listening(_ family: String) {
        switch watches[family] {
        case .suspected(let since, let topic, _):
            watches[family] = .suspected(since: since, topic: topic, listening: true)
        case nil: watches[family] = .listening
        default: break
        }
    }

    /// The broker acknowledged a publish of `topic`, of `family`. Only the first after the read-back listens is
    /// awaited: one sent before it may have passed the subscription. Returns whether an echo's deadline began.
    mutating func acknowledged(_ topic: String, family: String, now: Double) -> Bool {
        published.insert(family)
        let echoed = early[family]?.contains(topic) == true
        switch watches[family] {
        case .listening:
            early[family] = nil
            watches[family] = echoed ? .confirmed : .awaiting(topic: topic, since: now)
            return !echoed
        case .suspected(let since, nil, true):
            early[family] = nil
            watches[family] = echoed ? .confirmed : .suspected(since: since, topic: topic, listening: true)
            return false
        default:
            return false
        }
    }

    /// A message on `topic` arrived on `family`'s read-back, delivered live (not a retained copy from before).
    mutating func received(_ topic: String, family: String) -> Action? {
        switch watches[family] {
        case .awaiting(let awaited, _) where awaited == topic:
            watches[family] = .confirmed
            return nil
        case .suspected(_, let awaited?, true) where awaited == topic:
            watches[family] = .confirmed
            return .clear(family: family)
        case .listening, .suspected(_, nil, true):
            if early[family, default: []].count < Self.earlyLimit { early[family, default: []].insert(topic) }
            return nil
        default:
            return nil
        }
    }

    /// The time is `now`: each echo due by now and not come is a suspicion.
    mutating func deadline(now: Double) -> [Action] {
        var actions: [Action] = []
        for (family, watch) in watches.sorted(by: { $0.key < $1.key }) {
            guard case .awaiting(let topic, let since) = watch, since + wait <= now else { continue }
            watches[family] = .suspected(since: now, topic: topic, listening: true)
            episodes += 1
            actions.append(.suspect(family: family, topic: topic))
        }
        return actions
    }

    /// Whether `family`'s read-back is done for this connection (its subscription may end).
    func settled(_ family: String) -> Bool { watches[family] == .confirmed }
}
