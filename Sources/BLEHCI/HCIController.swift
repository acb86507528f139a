import BLETransport
import Foundation

/// What the controller tells its subscribers: every packet that is not an answer to a command, and the
/// faults the adapter lifecycle acts on.
public enum HCIControllerEvent: Sendable {
    /// An event other than Command Complete / Command Status (those are consumed by `execute`).
    /// Includes `.hardwareError`: the controller must be reset.
    case event(HCIEvent)
    /// Incoming ACL data.
    case acl(ACLDataPacket)
    /// A packet that did not parse; kept for counting and for logs.
    case malformed(H4Packet)
    /// A command got no answer within the bound: the controller may be stuck. `sentAt`: when it went out (a
    /// supervisor ignores the timeout of a command sent before its latest recovery step began).
    case commandTimedOut(HCIOpcode, after: Duration, sentAt: Duration)
    /// The transport ended (nil: end of input; otherwise the error). The stream finishes after this.
    case transportEnded((any Error)?)
}

/// The HCI controller as the host sees it: owns a transport and the controller's command credit.
///
/// A service with one `run()` loop that reads packets and watches command timeouts; `execute` may be
/// called from any task, before or while `run()` runs. Subscribers get every other event through
/// `events()`. When the transport ends, `run()` returns, waiting commands fail with
/// `HCIError.Code.transportClosed`, subscribers get `.transportEnded` and their streams finish.
/// `run()` closes the transport when it returns.
public final class HCIController: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Bound on the wait for Command Complete/Status (BlueZ: 2 s). A stuck controller is reported at the
        /// outstanding command's deadline.
        public var commandTimeout: Duration = .seconds(2)
        /// Advertising reports each subscriber may have waiting. Beyond it the controller waits for the subscriber
        /// when its transport can wait (a capture, a socket), and drops and counts the report when it cannot (a
        /// live radio). Every other event is always queued: the host's state depends on each.
        public var subscriberBuffer: Int = StageQueue<HCIControllerEvent>.defaultCapacity
        public init() {}
    }

    /// Counters for metrics.
    public struct Statistics: Sendable, Hashable {
        public var packetsReceived = 0
        public var malformedPackets = 0
        /// Advertising reports dropped because a subscriber fell behind (live sources only).
        public var droppedEvents = 0
        public var commands = HCICommandFlow.Counters()
        public init() {}
    }

    public let transport: any HCITransport
    public let clock: any BLEClock
    public let configuration: Configuration

    // Everything below is guarded by `lock`.
    private let lock = NSLock()
    private var flow: HCICommandFlow
    private var waiters: [HCICommandFlow.RequestID: CheckedContinuation<HCICommandFlow.Outcome, any Error>] = [:]
    private var cancelledEarly: Set<HCICommandFlow.RequestID> = []
    private var subscribers: [Subscriber] = []
    private var ended = false
    private var stats = Statistics()
    /// Signalled when a command goes out (the flow's `nextDeadline` may have come nearer): the timeout watcher sleeps
    /// until that deadline, or for good while no command is outstanding, instead of ticking.
    private let commandSent = WakeSignal()

    /// One `events(includingReports:)` queue. Advertising reports go only to those that asked for them.
    struct Subscriber {
        let queue: StageQueue<HCIControllerEvent>
        let wantsReports: Bool
    }

    public init(transport: any HCITransport, clock: any BLEClock, configuration: Configuration = Configuration()) {
        self.transport = transport
        self.clock = clock
        self.configuration = configuration
        self.flow = HCICommandFlow(timeout: configuration.commandTimeout)
    }

    public var statistics: Statistics {
        lock.withLock {
            var s = stats
            s.commands = flow.counters
            return s
        }
    }

    /// A new queue of events from now on. Subscribe before sending the command whose events you await.
    /// - Parameter includingReports: advertising reports (and malformed packets) too; only a scanner wants them. A
    ///   subscriber that takes them must keep reading or leave (cancel its iteration): when the transport can wait,
    ///   the controller waits for it.
    public func events(includingReports: Bool = false) -> StageQueue<HCIControllerEvent> {
        let queue = StageQueue<HCIControllerEvent>(
            capacity: configuration.subscriberBuffer,
            whenFull: transport.incoming.whenFull)
        let subscribed: Bool = lock.withLock {
            if ended { return false }
            subscribers.append(Subscriber(queue: queue, wantsReports: includingReports))
            return true
        }
        if subscribed {
            // Runs outside the queue's lock (StageQueue.cancel), so taking ours here cannot deadlock with a send.
            queue.setOnTermination { [weak self, weak queue] in
                guard let self else { return }
                self.lock.withLock { self.subscribers.removeAll { $0.queue === queue } }
            }
        } else {
            queue.offer(HCIControllerEvent.transportEnded(nil), essential: true)
            queue.finish()
        }
        return queue
    }

    /// Sends a command and waits for its answer.
    /// - Throws: `HCIError` (`.commandFailed` with the status, `.timedOut`, `.malformedResponse`,
    ///   `.transportClosed`, `.sendFailed`), or `CancellationError`.
    public func execute<C: HCICommand>(_ command: C) async throws -> C.Response {
        let outcome = try await submit(command.packet, opcode: C.opcode, completion: C.completion)
        switch outcome {
        case .commandStatus(let status):
            guard status.isSuccess else { throw HCIError.commandFailed(C.opcode, status) }
            // Only commands without return parameters end in Command Status; they parse from nothing.
            var empty = ByteCursor([])
            guard let r = C.parseReturnParameters(&empty) else { throw HCIError.malformedResponse(C.opcode) }
            return r
        case .commandComplete(let params):
            switch C.parseResponse(params) {
            case .success(let r)?: return r
            case .failure(let e)?: throw e
            case nil: throw HCIError.malformedResponse(C.opcode)
            }
        }
    }

    /// Sends a raw command packet (opcode and parameters already laid out) and returns what ended it.
    public func submit(_ packet: H4Packet, opcode: HCIOpcode, completion: HCICommandCompletion) async throws
        -> HCICommandFlow.Outcome
    {
        let id = lock.withLock { flow.makeRequestID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<HCICommandFlow.Outcome, any Error>) in
                let resumes: [() -> Void] = lock.withLock {
                    if cancelledEarly.remove(id) != nil || Task.isCancelled {
                        return [{ c.resume(throwing: CancellationError()) }]
                    }
                    waiters[id] = c
                    return perform(
                        flow.submit(id, packet: packet, opcode: opcode, completion: completion, now: clock.now()))
                }
                for r in resumes { r() }
            }
        } onCancel: {
            let c: CheckedContinuation<HCICommandFlow.Outcome, any Error>? = lock.withLock {
                guard let c = waiters.removeValue(forKey: id) else {
                    cancelledEarly.insert(id)
                    return nil
                }
                flow.cancel(id)
                return c
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Sends one ACL data packet. The controller's ACL buffer credit is not counted here: the host's ACL
    /// scheduler owns it (it learns the buffer count at bring-up and hears Number Of Completed Packets).
    /// Sent under the same lock as commands, so packets leave in the order they were handed over.
    /// - Throws: `HCIError.Code.transportClosed` once the transport has ended, or the transport's error.
    public func sendACL(_ packet: H4Packet) throws {
        try lock.withLock {
            guard !ended else { throw HCIError(code: .transportClosed, opcode: nil, detail: "ACL data after the end") }
            try transport.send(packet)
        }
    }

    /// Reads packets and watches command timeouts until the transport ends or the task is cancelled.
    /// Returns normally at end of input; throws the transport's error when it fails.
    public func run() async throws {
        defer { transport.close() }
        var failure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.watchCommandTimeouts() }
                group.addTask {
                    for try await packet in self.transport.incoming { await self.handle(packet) }
                }
                // Whichever ends first (the reader, normally) ends the other.
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch {
            failure = error
        }
        finish(failure)
        if let failure, !(failure is CancellationError) { throw failure }
    }

    /// Fails the commands that outlive the command timeout, at their deadlines (`HCICommandFlow.nextDeadline`); with
    /// no command outstanding it waits for one to be sent, so an idle controller costs no wake-ups.
    private func watchCommandTimeouts() async throws {
        while true {
            try Task.checkCancellation()
            let deadline = lock.withLock { flow.nextDeadline }
            guard let deadline else {
                await commandSent.wait()
                continue
            }
            let now = clock.now()
            if deadline > now {
                await commandSent.wait(upTo: deadline - now, clock: clock)
                continue
            }
            let resumes = lock.withLock { perform(flow.tick(now: now)) }
            for r in resumes { r() }
        }
    }

    /// One packet from the transport: a command's answer goes to the command flow; anything else to the subscribers,
    /// outside the lock, waiting for room when the transport can wait.
    func handle(_ packet: H4Packet) async {
        var resumes: [() -> Void] = []
        let delivery: (HCIControllerEvent, isReport: Bool, [Subscriber])? = lock.withLock {
            stats.packetsReceived += 1
            let event: HCIControllerEvent
            switch packet.type {
            case .event:
                guard let parsed = HCIEvent.parse(packet.payload[...]) else {
                    stats.malformedPackets += 1
                    return (.malformed(packet), packet.isAdvertisingReport, subscribers)
                }
                switch parsed {
                case .commandComplete, .commandStatus:
                    resumes = perform(flow.receive(parsed, now: clock.now()))
                    return nil
                case .leAdvertisingReport, .leExtendedAdvertisingReport:
                    return (.event(parsed), true, subscribers)
                default:
                    event = .event(parsed)
                }
            case .acl:
                guard let acl = ACLDataPacket.parse(packet.payload[...]) else {
                    stats.malformedPackets += 1
                    return (.malformed(packet), false, subscribers)
                }
                event = .acl(acl)
            default:
                // SCO and ISO are not used; commands never come from a controller.
                stats.malformedPackets += 1
                event = .malformed(packet)
            }
            return (event, false, subscribers)
        }
        for r in resumes { r() }
        guard let (event, isReport, targets) = delivery else { return }
        var dropped = 0
        for s in targets {
            if isReport {
                guard s.wantsReports else { continue }
                if await s.queue.send(event) == .dropped { dropped += 1 }
            } else {
                s.queue.offer(event, essential: true)
            }
        }
        if dropped > 0 { lock.withLock { stats.droppedEvents += dropped } }
    }

    func finish(_ error: (any Error)?) {
        let (resumes, streams) = lock.withLock {
            ended = true
            let detail = error.map { "\($0)" }
            let reason = HCIError(code: .transportClosed, opcode: nil, detail: detail)
            let r = perform(flow.close(reason))
            let s = subscribers.map(\.queue)
            subscribers.removeAll()
            return (r, s)
        }
        for r in resumes { r() }
        let end = HCIControllerEvent.transportEnded(error is CancellationError ? nil : error)
        for s in streams {
            s.offer(end, essential: true)
            s.finish()
        }
    }

    /// Carries out the flow's actions. Called with `lock` held: sending under the lock keeps packets in
    /// the order the flow chose. Returns the continuations to resume once the lock is released.
    private func perform(_ actions: [HCICommandFlow.Action]) -> [() -> Void] {
        var resumes: [() -> Void] = []
        for action in actions {
            switch action {
            case .send(let id, let packet):
                commandSent.signal()
                do {
                    try transport.send(packet)
                } catch {
                    let op = HCIOpcode(
                        rawValue: packet.payload.count >= 2
                            ? UInt16(packet.payload[0]) | UInt16(packet.payload[1]) << 8 : 0)
                    resumes += perform(flow.sendFailed(id, .sendFailed(op, "\(error)"), now: clock.now()))
                }
            case .complete(let id, let outcome):
                if let c = waiters.removeValue(forKey: id) { resumes.append { c.resume(returning: outcome) } }
            case .fail(let id, let error):
                if let c = waiters.removeValue(forKey: id) { resumes.append { c.resume(throwing: error) } }
            case .reportTimeout(let opcode, let after, let sentAt):
                broadcast(.commandTimedOut(opcode, after: after, sentAt: sentAt))
            }
        }
        return resumes
    }

    /// Called with `lock` held: a fault every subscriber hears (never dropped, never waits).
    private func broadcast(_ event: HCIControllerEvent) {
        for s in subscribers { s.queue.offer(event, essential: true) }
    }
}
