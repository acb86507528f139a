import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Shared mode: the kernel owns the adapter's LE links and L2CAP, so a link is a kernel L2CAP socket on the ATT
/// fixed channel (`L2CAPSocket.connect`): the kernel connects (scanning for the peer first if it must).
///
/// The manager's actions map onto the socket: the attempt is the connect, its Cancel cancels the connect (which
/// closes the socket, and the kernel cancels its LE Create Connection), Disconnect closes the socket (the kernel
/// ends the LE link once no socket uses it), and Connection Complete is the connect succeeding. Failures and ends
/// come back as the kernel's errno (`ConnectionManager.Reason.kernel`). The kernel hands out no connection
/// handles, so links get ids of ours, never reused within the service's life. There is no HCI Read RSSI here.
final class KernelLinkMaker: PeripheralLinkMaker, @unchecked Sendable {
    let adapter: String
    let clock: any BLEClock
    let logger: Logger
    /// The socket's own connect deadline, a backstop behind the manager's connect timeout (which cancels first).
    let connectTimeout: Duration
    let post: @Sendable (ConnectionManager.Event) -> Void
    /// The next link id (`LinkIDs`, kept by the service across sessions).
    let nextID: @Sendable () -> UInt16

    /// Link relays, run in `run()`'s task group so that each ends with the session.
    private let (jobs, submit) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
    private let state = Locked(State())

    struct State {
        var attempt: Task<Void, Never>?
        var sockets: [UInt16: L2CAPSocket] = [:]
        /// Bearers made at `.linkUp`, each handed out once.
        var bearers: [UInt16: RelayBearer] = [:]
        var ended = false
    }

    init(
        adapter: String, clock: any BLEClock, logger: Logger, connectTimeout: Duration,
        nextID: @escaping @Sendable () -> UInt16,
        post: @escaping @Sendable (ConnectionManager.Event) -> Void
    ) {
        self.adapter = adapter
        self.clock = clock
        self.logger = logger
        self.connectTimeout = connectTimeout
        self.nextID = nextID
        self.post = post
    }

    var readsRSSI: Bool { false }
    /// The socket's stream is unbounded (the GATT client's own bounded buffer counts its drops): none here.
    var droppedPDUs: Int { 0 }
    func rssi(of handle: UInt16) async -> Int8? { nil }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            // Ends when the service cancels the session.
            for await job in jobs { group.addTask { await job() } }
            let (attempt, sockets) = state.withLock { s -> (Task<Void, Never>?, [L2CAPSocket]) in
                s.ended = true
                return (s.attempt, Array(s.sockets.values))
            }
            attempt?.cancel()
            await attempt?.value
            for socket in sockets { socket.close() }
            group.cancelAll()
        }
    }

    func connect(_ peer: ConnectionManager.Peer, parameters: LEConnectionParameters) async {
        // LE address types 0x00/0x02 are public (identity) addresses, 0x01/0x03 random: the kernel's BDADDR_LE_*.
        let type: L2CAPAddress.AddressType = peer.addressType.rawValue & 1 == 1 ? .random : .public
        var w = ByteWriter(capacity: 6)
        peer.address.write(to: &w)  // least significant byte first, as bdaddr_t
        let target = L2CAPAddress(bytes: w.bytes, type: type)!
        let task = Task { [self] in await attempt(target, peer: peer.address) }
        // Registered before this returns, so a Cancel that follows finds it.
        let refused = state.withLock { s -> Bool in
            if s.ended { return true }
            s.attempt = task
            return false
        }
        if refused { task.cancel() }
    }

    private func attempt(_ target: L2CAPAddress, peer: BDAddress) async {
        do {
            let socket = try await L2CAPSocket.connect(
                to: target, adapter: adapter, channel: L2CAPSocket.attChannel,
                security: .low, timeout: connectTimeout, clock: clock)
            let id = nextID()
            let bearer = RelayBearer(socket: socket)
            let kept = state.withLock { s -> Bool in
                s.attempt = nil
                if s.ended { return false }
                s.sockets[id] = socket
                s.bearers[id] = bearer
                return true
            }
            guard kept else {
                socket.close()
                return
            }
            logger.debug("kernel link \(id): \(socket.name)")
            // The bearer must exist before `.linkUp` asks for it; the relay reports the link's end.
            submit.yield { [self] in
                await bearer.relay()
                state.withLock {
                    $0.sockets[id] = nil
                    $0.bearers[id] = nil
                }
                post(.linkEnded(handle: id, Self.reason(socket.endReason, orderly: "the link ended")))
            }
            post(.connectionComplete(status: .success, handle: id, peer: peer))
        } catch is CancellationError {
            state.withLock { $0.attempt = nil }
            post(.connectionFailed(peer: peer, nil))
        } catch {
            state.withLock { $0.attempt = nil }
            post(.connectionFailed(peer: peer, Self.reason(error as? TransportError, orderly: "\(error)")))
        }
    }

    func cancelConnect() async {
        state.withLock { $0.attempt }?.cancel()
    }

    func disconnect(_ handle: UInt16, reason: HCIStatus) async {
        // The kernel chooses the HCI reason itself (0x13 Remote User Terminated Connection for a socket closed).
        if let socket = state.withLock({ $0.sockets[handle] }) {
            socket.close()
        } else {
            post(.linkEnded(handle: handle, .kernel("no such link")))
        }
    }

    func bearer(for handle: UInt16) -> (any ATTBearer)? {
        state.withLock { $0.bearers[handle] }
    }

    /// "ECONNRESET, Connection reset by peer (errno 104)" out of an L2CAP error's message, which names the errno
    /// after the operation ("link hci0 → … ended: ECONNRESET, …(errno 104): hint"); the whole message otherwise.
    static func reason(_ error: TransportError?, orderly: String) -> ConnectionManager.Reason {
        guard let error else { return .kernel(orderly) }
        guard let code = error.errno, let end = error.message.range(of: "(errno \(code))") else {
            return .kernel(error.message)
        }
        let before = error.message[..<end.lowerBound]
        let start = before.range(of: ": ", options: .backwards)?.upperBound ?? before.startIndex
        var text = before[start...]
        while text.last == " " { text = text.dropLast() }
        return .kernel(text + " (errno \(code))")
    }
}

/// Ids for kernel links: the kernel gives none, the manager keys links by one. Unique for the service's life, so
/// a late end of an old link can never be taken for a newer one. Kept within 12 bits, like HCI handles.
struct LinkIDs: Sendable {
    private var last: UInt16 = 0
    mutating func next() -> UInt16 {
        last = last >= 0x0EFF ? 1 : last + 1
        return last
    }
}

/// The ATT bearer of a kernel link, relaying the socket's PDUs so that the maker sees the link end even while the
/// GATT client owns the stream.
final class RelayBearer: ATTBearer, @unchecked Sendable {
    let socket: L2CAPSocket
    let incoming: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation

    init(socket: L2CAPSocket) {
        self.socket = socket
        (incoming, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
    }

    /// Until the socket's stream ends (the link is gone, or closed).
    func relay() async {
        for await pdu in socket.incoming { continuation.yield(pdu) }
        continuation.finish()
    }

    func send(_ pdu: [UInt8]) throws { try socket.send(pdu) }
    func drop() { socket.close() }
}
