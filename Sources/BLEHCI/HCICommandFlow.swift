import BLETransport

/// The host's side of HCI command flow control, as a state machine with no I/O
/// (Core v5.4, Vol 4, Part E, §4.4 "Command flow control").
///
/// The controller grants command credit through Num_HCI_Command_Packets in every Command Complete and
/// Command Status; the host may send that many commands before it hears again, and assumes one at power-on.
/// This type is the only owner of that credit: commands are queued until there is credit, answers are
/// matched to the oldest outstanding command with the same opcode (the only key the controller echoes,
/// as BlueZ `src/shared/hci.c` does), and a command with no answer within `timeout` is failed and reported —
/// a controller that stops answering is "stuck" (Linux logs "command tx timeout"). After a timeout one credit
/// is restored so that the queue moves again, as the Linux kernel does.
///
/// Inputs: `submit`, `receive` (Command Complete / Status), `tick` (time passed), `cancel`, `sendFailed`,
/// `close`. Each returns actions for the caller to carry out, in order.
public struct HCICommandFlow: Sendable {
    public struct RequestID: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        public var description: String { "#\(rawValue)" }
    }

    /// What ended a command, before its return parameters are interpreted.
    public enum Outcome: Sendable {
        /// Command Complete: Return_Parameters, Status first.
        case commandComplete(ArraySlice<UInt8>)
        /// Command Status: for a command that completes later, or a failure of any command.
        case commandStatus(HCIStatus)
    }

    public enum Action: Sendable {
        /// Write this packet to the controller now. If the write fails, call `sendFailed`.
        case send(RequestID, H4Packet)
        /// The request is answered.
        case complete(RequestID, Outcome)
        /// The request failed without an answer (timeout, transport closed, send failed).
        case fail(RequestID, HCIError)
        /// A command went unanswered for `after`: the controller may be stuck. Reported once per command.
        case reportTimeout(HCIOpcode, after: Duration, sentAt: Duration)
    }

    /// Counters for metrics.
    public struct Counters: Sendable, Hashable {
        public var sent = 0
        public var answered = 0
        public var timedOut = 0
        /// Command Complete/Status for an opcode with nothing outstanding (late answers after a timeout,
        /// or a controller's own initial No Operation).
        public var unmatched = 0
        public init() {}
    }

    struct Request: Sendable {
        var id: RequestID
        var opcode: HCIOpcode
        var completion: HCICommandCompletion
        var packet: H4Packet
        var sentAt: Duration = .zero
        /// Cancelled while outstanding: its answer is still matched (so that it is not taken for a later
        /// command with the same opcode) and then dropped.
        var abandoned = false
    }

    /// How long a command may wait for Command Complete/Status. BlueZ and Linux use 2 s (HCI_CMD_TIMEOUT).
    public var timeout: Duration
    /// Commands the controller will accept now.
    public private(set) var credits = 1
    public private(set) var counters = Counters()
    public private(set) var isClosed = false
    var queue: [Request] = []
    var outstanding: [Request] = []
    var nextID: UInt64 = 0
    var closeReason: HCIError?

    public init(timeout: Duration = .seconds(2)) { self.timeout = timeout }

    public var queuedCount: Int { queue.count }
    public var outstandingCount: Int { outstanding.count }

    /// When the oldest outstanding command times out; nil when nothing is outstanding.
    public var nextDeadline: Duration? { outstanding.map(\.sentAt).min().map { $0 + timeout } }

    public mutating func makeRequestID() -> RequestID {
        nextID += 1
        return RequestID(rawValue: nextID)
    }

    /// Queues a command; sends it at once if there is credit.
    public mutating func submit(
        _ id: RequestID, packet: H4Packet, opcode: HCIOpcode, completion: HCICommandCompletion, now: Duration
    ) -> [Action] {
        if isClosed { return [.fail(id, closeReason.map { $0.about(opcode) } ?? .transportClosed(opcode))] }
        queue.append(Request(id: id, opcode: opcode, completion: completion, packet: packet))
        return drain(now: now)
    }

    /// Feeds an event; only Command Complete and Command Status matter here.
    public mutating func receive(_ event: HCIEvent, now: Duration) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .commandComplete(let cc):
            credits = Int(cc.numHCICommandPackets)
            if cc.opcode != .noOperation {
                if let i = outstanding.firstIndex(where: { $0.opcode == cc.opcode }) {
                    let r = outstanding.remove(at: i)
                    counters.answered += 1
                    if !r.abandoned { actions.append(.complete(r.id, .commandComplete(cc.returnParameters))) }
                } else {
                    counters.unmatched += 1
                }
            }
        case .commandStatus(let cs):
            credits = Int(cs.numHCICommandPackets)
            if cs.opcode != .noOperation {
                // A command that ends in Command Complete may still be refused with Command Status (§4.4:
                // e.g. 0x01 Unknown HCI Command); a successful Command Status for it is not its answer.
                if let i = outstanding.firstIndex(where: {
                    $0.opcode == cs.opcode && ($0.completion == .commandStatus || !cs.status.isSuccess)
                }) {
                    let r = outstanding.remove(at: i)
                    counters.answered += 1
                    if !r.abandoned { actions.append(.complete(r.id, .commandStatus(cs.status))) }
                } else if !outstanding.contains(where: { $0.opcode == cs.opcode }) {
                    counters.unmatched += 1
                }
            }
        default:
            return []
        }
        return actions + drain(now: now)
    }

    /// Time passed: fails commands that have waited longer than `timeout`.
    public mutating func tick(now: Duration) -> [Action] {
        var actions: [Action] = []
        while let i = outstanding.firstIndex(where: { now - $0.sentAt >= timeout }) {
            let r = outstanding.remove(at: i)
            counters.timedOut += 1
            actions.append(.reportTimeout(r.opcode, after: timeout, sentAt: r.sentAt))
            if !r.abandoned { actions.append(.fail(r.id, .timedOut(r.opcode, after: timeout))) }
            // The controller will not give this credit back; take one so the queue moves (the next command
            // either gets answered or times out in turn, so a dead controller is reported every `timeout`).
            credits = max(credits, 1)
        }
        return actions + drain(now: now)
    }

    /// The caller gave up on a request. A queued one is dropped; an outstanding one keeps its place so that
    /// its answer is recognised. Returns no completion for it: the caller ends its own wait.
    public mutating func cancel(_ id: RequestID) {
        if let i = queue.firstIndex(where: { $0.id == id }) {
            queue.remove(at: i)
        } else if let i = outstanding.firstIndex(where: { $0.id == id }) {
            outstanding[i].abandoned = true
        }
    }

    /// The transport refused the packet of `id`: fail it and give back its credit.
    public mutating func sendFailed(_ id: RequestID, _ error: HCIError, now: Duration) -> [Action] {
        guard let i = outstanding.firstIndex(where: { $0.id == id }) else { return [] }
        let r = outstanding.remove(at: i)
        credits += 1
        return (r.abandoned ? [] : [.fail(id, error)]) + drain(now: now)
    }

    /// The transport ended: everything queued or outstanding fails, and so does anything submitted later.
    public mutating func close(_ reason: HCIError) -> [Action] {
        isClosed = true
        closeReason = reason
        let all = outstanding + queue
        outstanding = []
        queue = []
        return all.filter { !$0.abandoned }.map { .fail($0.id, reason.about($0.opcode)) }
    }

    mutating func drain(now: Duration) -> [Action] {
        var actions: [Action] = []
        while credits > 0, !queue.isEmpty {
            var r = queue.removeFirst()
            r.sentAt = now
            credits -= 1
            counters.sent += 1
            outstanding.append(r)
            actions.append(.send(r.id, r.packet))
        }
        return actions
    }
}
