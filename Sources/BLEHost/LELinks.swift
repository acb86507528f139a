import BLEHCI
import BLETransport
import Foundation
import Logging

/// The LE links of one controller, between HCI ACL packets and ATT PDUs: the one owner of the controller's LE ACL
/// buffer credit and of every link's L2CAP fixed channels (Core v5.4, Vol 3, Part A, §2.1).
///
/// A service with one `run()`: it subscribes to the controller's events and
/// - joins incoming ACL fragments into L2CAP frames (`ACLReassembler`) and routes them by channel: ATT (0x0004) to
///   the link's bearer, LE signaling (0x0005) to `L2CAPLESignaling`, SMP (0x0006) to the link's pairing while
///   enrolment accepts one (`PeripheralPairings`), otherwise to `SMPResponder`, which refuses; frames on other
///   channels are counted and dropped;
/// - answers LE Long Term Key Request (with the key of a pairing of ours, otherwise the Negative Reply) and hands
///   Encryption Change to the pairing;
/// - feeds Number Of Completed Packets and Disconnection Complete to the `ACLScheduler`;
/// - opens a link on LE (Enhanced) Connection Complete with status 0 (so ACL that follows at once is not lost) and
///   closes it on Disconnection Complete (its bearer's `incoming` finishes, later `send`s throw);
/// - runs the HCI commands the links need (Disconnect for a bearer's `drop()`, LE Connection Update for an accepted
///   parameter request) one after another in a child task, fed through an inbox.
///
/// Outgoing ACL packets are sent under this object's lock, so fragments leave in the order the scheduler chose.
/// `run()` may be called once.
public final class LELinks: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The largest incoming L2CAP frame, header included; larger ones are dropped.
        public var maximumFrameSize = L2CAPFrame.headerSize + 517
        /// ACL fragments one link may have waiting for credit; beyond it `send` throws `.queueFull`.
        public var queueLimit = 256
        /// ATT PDUs a bearer's `incoming` holds for a slow reader; older ones are dropped (and counted) beyond it.
        public var incomingBuffer = 1024
        public init() {}
    }

    public struct Statistics: Sendable, Hashable {
        public var reassembler = ACLReassembler.Counters()
        public var scheduler = ACLScheduler.Counters()
        public var signaling = L2CAPLESignaling.Counters()
        public var smp = SMPResponder.Counters()
        public var linksOpened = 0
        public var linksClosed = 0
        public var openLinks = 0
        /// ACL packets sent and not yet completed by the controller.
        public var inFlight = 0
        /// The most packets ever in flight at once (never above the controller's buffer count).
        public var maxInFlight = 0
        /// ACL fragments waiting for credit.
        public var queued = 0
        public var attPDUsReceived = 0
        public var attPDUsSent = 0
        /// ATT PDUs dropped because a bearer's reader fell behind.
        public var attPDUsDropped = 0
        /// Frames on a channel this host does not serve.
        public var unknownChannelFrames = 0
        /// Frames for a handle with no link.
        public var framesWithoutLink = 0
        /// ACL packets the transport refused.
        public var sendFailures = 0
        /// LE Remote Connection Parameter Requests (the link-layer procedure) answered with the Reply / the
        /// Negative Reply.
        public var remoteParameterRequestsAccepted = 0
        public var remoteParameterRequestsRejected = 0
        /// Disconnect, LE Connection Update or parameter-request answers that failed.
        public var commandFailures = 0
        public init() {}
    }

    private enum Command: Sendable {
        case disconnect(UInt16)
        /// LE Connection Update, or the answer to LE Remote Connection Parameter Request.
        case run(any HCICommand)
    }

    private struct Link {
        let bearer: ACLBearer
        var phase = Phase.open

        enum Phase {
            /// Carrying ATT both ways.
            case open
            /// `drop()` was called: Disconnect is on its way; nothing more is sent.
            case dropping
        }
    }

    /// The links `run()` carries, by handle; once it has ended there are none, and none is made again.
    private enum LinkTable {
        case carrying([UInt16: Link])
        /// `run()` has ended: a bearer asked for is closed at once, a send throws, a pairing stream ends at once.
        case ended

        subscript(handle: UInt16) -> Link? {
            guard case .carrying(let table) = self else { return nil }
            return table[handle]
        }

        var count: Int {
            guard case .carrying(let table) = self else { return 0 }
            return table.count
        }

        /// Puts `link` on `handle` (nil: removes it) and returns the one it replaced; nothing once ended.
        @discardableResult
        mutating func set(_ handle: UInt16, _ link: Link?) -> Link? {
            guard case .carrying(var table) = self else { return nil }
            self = .ended  // the table leaves the enum while it changes, so that it changes in place, uncopied
            defer { self = .carrying(table) }
            if let link { return table.updateValue(link, forKey: handle) }
            return table.removeValue(forKey: handle)
        }

        /// Ends the table; the links it carried.
        mutating func end() -> [UInt16: Link] {
            defer { self = .ended }
            guard case .carrying(let table) = self else { return [:] }
            return table
        }
    }

    public let controller: HCIController
    public let configuration: Configuration
    private let logger: Logger
    private let clock: any BLEClock
    /// Wakes the SMP timer task when a pairing's deadline may have moved.
    private let pairingTimer = WakeSignal()
    private let inbox: AsyncStream<Command>
    private let inboxContinuation: AsyncStream<Command>.Continuation

    // Guarded by `lock`.
    private let lock = NSLock()
    private var links = LinkTable.carrying([:])
    private var reassembler: ACLReassembler
    private var scheduler: ACLScheduler
    private var signaling = L2CAPLESignaling()
    private var smp = SMPResponder()
    private var pairings = PeripheralPairings()
    private var pairingReports: AsyncStream<PairingEvent>.Continuation?
    private var stats = Statistics()
    /// The controller's events (no advertising reports), subscribed at init: links made before `run()` reads are
    /// heard.
    private let events: StageQueue<HCIControllerEvent>

    /// - Parameter buffers: the controller's LE ACL buffers (`ControllerInfo.leACLBuffers`): the most octets of
    ///   L2CAP data per ACL packet, and how many packets the controller holds.
    public init(
        controller: HCIController, buffers: (length: Int, count: Int),
        configuration: Configuration = Configuration(), clock: any BLEClock = SystemClock(),
        logger: Logger = Logger(label: "ble.host.links")
    ) {
        self.controller = controller
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        reassembler = ACLReassembler(maximumFrameSize: configuration.maximumFrameSize)
        scheduler = ACLScheduler(
            bufferLength: max(1, buffers.length), bufferCount: max(1, buffers.count),
            queueLimit: configuration.queueLimit)
        (inbox, inboxContinuation) = AsyncStream.makeStream(of: Command.self)
        events = controller.events()
    }

    public var statistics: Statistics {
        lock.withLock {
            var s = stats
            s.reassembler = reassembler.counters
            s.scheduler = scheduler.counters
            s.signaling = signaling.counters
            s.smp = smp.counters
            s.openLinks = links.count
            s.inFlight = scheduler.inFlight
            s.queued = scheduler.queued
            return s
        }
    }

    /// The ATT bearer of the link on `handle`, made if absent; the same object while the link lasts. Call it once
    /// LE Connection Complete has been seen. After `run()` has ended the bearer returned is already closed.
    public func bearer(for handle: UInt16) -> any ATTBearer {
        let h = handle & 0x0FFF
        return lock.withLock {
            if case .ended = links {
                let b = ACLBearer(handle: h, owner: nil, bufferSize: 1)
                b.continuation.finish()
                return b
            }
            return openLink(h)
        }
    }

    /// Handles the controller's events until the transport ends or the task is cancelled; then every bearer's
    /// `incoming` finishes and later sends throw.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.runCommands() }
            group.addTask { await self.runPairingTimer() }
            for await event in events.ignoringErrors {
                if case .transportEnded = event { break }
                handle(event)
            }
            group.cancelAll()
        }
        finish()
    }

    // MARK: - Events

    func handle(_ event: HCIControllerEvent) {
        lock.withLock {
            switch event {
            case .acl(let packet):
                guard let (handle, frame) = reassembler.receive(packet) else { return }
                route(frame, handle: handle)
            case .event(.numberOfCompletedPackets(let entries)):
                scheduler.completed(entries)
                pump()
            case .event(.disconnectionComplete(let dc)) where dc.status.isSuccess:
                closeLink(dc.handle, reason: "\(dc.reason)")
                perform(pairings.linkClosed(handle: dc.handle))
            case .event(.leConnectionComplete(let cc)) where cc.status.isSuccess:
                _ = openLink(cc.handle)
                if cc.role == Self.peripheralRole {
                    let peer = SMPPairingResponder.Party(
                        type: LEAddressType(rawValue: cc.peerAddressType.rawValue & 0x01),
                        address: cc.peerResolvablePrivateAddress.flatMap { $0.rawValue == 0 ? nil : $0 }
                            ?? cc.peerAddress)
                    perform(pairings.linkOpened(handle: cc.handle, peer: peer, now: clock.now()))
                }
            case .event(.leLongTermKeyRequest(let handle, _, _)):
                perform(pairings.longTermKeyRequested(handle: handle, now: clock.now()))
            case .event(.encryptionChange(let ec)):
                perform(
                    pairings.encryptionChanged(
                        handle: ec.handle, on: ec.status.isSuccess && ec.enabled, now: clock.now()))
            case .event(.leRemoteConnectionParameterRequest(let handle, let p)):
                // The controller waits for our answer (the LL procedure has a response timeout): always answer.
                let answer = LERemoteConnectionParameterRequest.answer(handle: handle, p)
                if answer is LERemoteConnectionParameterRequestReplyCommand {
                    stats.remoteParameterRequestsAccepted += 1
                } else {
                    stats.remoteParameterRequestsRejected += 1
                }
                inboxContinuation.yield(.run(answer))
            default:
                break
            }
        }
    }

    /// Called with `lock` held.
    private func route(_ frame: L2CAPFrame, handle: UInt16) {
        guard let link = links[handle] else {
            stats.framesWithoutLink += 1
            return
        }
        switch frame.channel {
        case .att:
            stats.attPDUsReceived += 1
            // An enrolling phone's requests go to the enrolment's GATT database, not to a client's bearer.
            if let actions = pairings.attReceived(frame.payload, handle: handle) {
                perform(actions)
                return
            }
            if case .dropped = link.bearer.continuation.yield(frame.payload) { stats.attPDUsDropped += 1 }
        case .leSignaling:
            for action in signaling.receive(frame.payload) {
                switch action {
                case .reply(let command):
                    enqueue(L2CAPFrame(channel: .leSignaling, payload: command), handle: handle)
                case .updateConnection(let p):
                    logger.info(
                        "links: 0x\(String(handle, radix: 16)) peer asked for interval \(p.intervalMin)–\(p.intervalMax)"
                    )
                    inboxContinuation.yield(.run(LEConnectionUpdateCommand(handle: handle, parameters: p)))
                }
            }
        case .securityManager:
            if let actions = pairings.received(frame.payload, handle: handle, now: clock.now()) {
                perform(actions)
            } else if let reply = smp.receive(frame.payload) {
                enqueue(L2CAPFrame(channel: .securityManager, payload: reply), handle: handle)
            }
        default:
            stats.unknownChannelFrames += 1
        }
    }

    /// Called with `lock` held.
    private func openLink(_ handle: UInt16) -> ACLBearer {
        if let link = links[handle] { return link.bearer }
        let bearer = ACLBearer(handle: handle, owner: self, bufferSize: configuration.incomingBuffer)
        links.set(handle, Link(bearer: bearer))
        stats.linksOpened += 1
        logger.debug("links: 0x\(String(handle, radix: 16)) open")
        return bearer
    }

    /// Called with `lock` held.
    private func closeLink(_ handle: UInt16, reason: String) {
        reassembler.remove(handle: handle)
        scheduler.disconnected(handle: handle)
        if let link = links.set(handle, nil) {
            link.bearer.continuation.finish()
            stats.linksClosed += 1
            logger.debug("links: 0x\(String(handle, radix: 16)) closed: \(reason)")
        }
        pump()  // the link's unacknowledged packets gave their credit back
    }

    // MARK: - Sending

    func sendATT(_ pdu: [UInt8], on bearer: ACLBearer) throws {
        try lock.withLock {
            guard let link = links[bearer.handle], link.bearer === bearer, link.phase == .open else {
                throw LELinkError(code: .linkClosed, handle: bearer.handle)
            }
            guard pdu.count <= L2CAPFrame.maximumPayload else {
                throw LELinkError(code: .tooLong, handle: bearer.handle)
            }
            guard enqueue(L2CAPFrame(channel: .att, payload: pdu), handle: bearer.handle) else {
                throw LELinkError(code: .queueFull, handle: bearer.handle)
            }
            stats.attPDUsSent += 1
        }
    }

    /// Called with `lock` held. Queues a frame and sends what credit allows.
    @discardableResult
    private func enqueue(_ frame: L2CAPFrame, handle: UInt16) -> Bool {
        guard case .queued = scheduler.enqueue(frame.bytes, handle: handle) else { return false }
        pump()
        return true
    }

    /// Called with `lock` held: packets leave in the scheduler's order.
    private func pump() {
        for packet in scheduler.nextPackets() {
            do {
                try controller.sendACL(packet)
            } catch {
                stats.sendFailures += 1
                logger.debug("links: ACL send failed: \(error)")
            }
        }
        stats.maxInFlight = max(stats.maxInFlight, scheduler.inFlight)
    }

    // MARK: - Pairing

    /// LE Connection Complete's Role: 0x01, "Connection is peripheral" (§7.7.65.1).
    static let peripheralRole: UInt8 = 0x01

    /// From now on every link a central makes to us gets a pairing (`PeripheralPairings`); what happens to them
    /// comes on the stream, which ends at `stopAcceptingPairing()` or when `run()` ends. A second call replaces the
    /// first (its stream ends).
    public func acceptPairing(_ offer: PeripheralPairings.Offer) -> AsyncStream<PairingEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PairingEvent.self)
        let old: AsyncStream<PairingEvent>.Continuation? = lock.withLock {
            let old = pairingReports
            if case .ended = links {
                continuation.finish()
                return old
            }
            pairings.accept(offer)
            pairingReports = continuation
            return old
        }
        old?.finish()
        return stream
    }

    /// Links made from now on are refused pairing again; the stream of `acceptPairing` ends.
    public func stopAcceptingPairing() {
        let reports: AsyncStream<PairingEvent>.Continuation? = lock.withLock {
            pairings.stop()
            defer { pairingReports = nil }
            return pairingReports
        }
        reports?.finish()
    }

    /// The operator's answer to `PairingEvent.compare`.
    public func confirmPairing(handle: UInt16, _ yes: Bool) {
        lock.withLock { perform(pairings.confirm(handle: handle, yes, now: clock.now())) }
    }

    /// Ends the link on `handle` (HCI Disconnect, Remote User Terminated Connection).
    public func disconnect(handle: UInt16) { disconnect(handle: handle, ifCarrying: nil) }

    /// Marks the link as dropping and posts one Disconnect; with a bearer, only while the handle still carries it
    /// (a handle the controller reused for a newer link is not ended for an old bearer's sake).
    private func disconnect(handle: UInt16, ifCarrying bearer: ACLBearer?) {
        let post: Bool = lock.withLock {
            guard var link = links[handle], link.phase == .open else { return false }
            if let bearer, link.bearer !== bearer { return false }
            link.phase = .dropping
            links.set(handle, link)
            return true
        }
        if post { inboxContinuation.yield(.disconnect(handle)) }
    }

    /// Called with `lock` held.
    private func perform(_ actions: [PeripheralPairings.Action]) {
        for action in actions {
            switch action {
            case .send(let handle, let bytes):
                enqueue(L2CAPFrame(channel: .securityManager, payload: bytes), handle: handle)
            case .sendATT(let handle, let bytes):
                enqueue(L2CAPFrame(channel: .att, payload: bytes), handle: handle)
            case .replyLongTermKey(let handle, let key):
                inboxContinuation.yield(.run(LELongTermKeyRequestReplyCommand(handle: handle, longTermKey: key)))
            case .refuseLongTermKey(let handle):
                inboxContinuation.yield(.run(LELongTermKeyRequestNegativeReplyCommand(handle: handle)))
            case .report(let event):
                pairingReports?.yield(event)
            }
        }
        if !actions.isEmpty { pairingTimer.signal() }
    }

    /// The SMP timers (§3.4): sleeps until the earliest pairing's deadline, or until a pairing moves it.
    private func runPairingTimer() async {
        while !Task.isCancelled {
            let deadline = lock.withLock { pairings.nextDeadline }
            if let deadline {
                let now = clock.now()
                if deadline <= now {
                    lock.withLock { perform(pairings.tick(now: now)) }
                    continue
                }
                await pairingTimer.wait(upTo: deadline - now, clock: clock)
            } else {
                await pairingTimer.wait()
            }
        }
    }

    // MARK: - Commands

    func drop(_ bearer: ACLBearer) { disconnect(handle: bearer.handle, ifCarrying: bearer) }

    private func runCommands() async {
        for await command in inbox {
            do {
                switch command {
                case .disconnect(let handle):
                    do {
                        _ = try await controller.execute(DisconnectCommand(handle: handle))
                    } catch let e as HCIError where e.status == .unknownConnectionIdentifier {
                        // The link was already gone (its Disconnection Complete may have been missed): close it here.
                        lock.withLock { closeLink(handle, reason: "\(e)") }
                    }
                case .run(let command):
                    try await execute(command)
                }
            } catch is CancellationError {
                return
            } catch {
                lock.withLock { stats.commandFailures += 1 }
                logger.info("links: \(error)")
            }
        }
    }

    private func execute(_ command: some HCICommand) async throws {
        _ = try await controller.execute(command)
    }

    private func finish() {
        let (reports, bearers): (AsyncStream<PairingEvent>.Continuation?, [ACLBearer]) = lock.withLock {
            let carried = links.end()
            let reports = pairingReports
            pairingReports = nil
            for h in carried.keys { scheduler.disconnected(handle: h) }
            stats.linksClosed += carried.count
            return (reports, carried.values.map(\.bearer))
        }
        reports?.finish()
        inboxContinuation.finish()
        for b in bearers { b.continuation.finish() }
    }
}
