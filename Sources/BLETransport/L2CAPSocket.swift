import CBluetooth
import CBluetoothShim
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel L2CAP socket on an LE fixed channel (AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP): in shared mode
/// the kernel owns L2CAP, so the gateway reaches a peripheral's ATT server (CID 0x0004, Core v5.4, Vol 3,
/// Part A, §2.1) through one of these instead of ACL packets of its own. Every read and every write is one
/// whole PDU (a sequenced-packet socket keeps the boundaries).
///
/// Owns its descriptor. A thread of its own waits for readiness (poll beside a self-pipe, as the other
/// descriptor transports do) and feeds `incoming`; `send` writes from the caller's thread; `close()`
/// wakes the reader, which then closes the descriptor and finishes the stream.
public final class L2CAPSocket: @unchecked Sendable {
    /// The ATT fixed channel (Vol 3, Part A, §2.1, Table 2.3).
    public static let attChannel: UInt16 = 0x0004

    /// Security level asked of the kernel (BT_SECURITY, include/net/bluetooth/bluetooth.h). `low` needs no
    /// pairing; `medium` and up make the kernel encrypt the link first (and pair, if there is no key).
    public struct Security: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let low = Security(rawValue: 1)
        public static let medium = Security(rawValue: 2)
        public static let high = Security(rawValue: 3)
        public var description: String {
            switch self {
            case .low: "low"
            case .medium: "medium"
            case .high: "high"
            default: "security level \(rawValue)"
            }
        }
    }

    /// This end of the link: the adapter's address.
    public let local: L2CAPAddress
    /// The other end.
    public let peer: L2CAPAddress
    /// "hci0 → AA:BB:CC:DD:EE:FF (public)", for messages.
    public let name: String
    /// The PDUs the peer sent, in order; finishes when the link ends or `close()` is called
    /// (`endReason` then says why, if it was an error).
    public let incoming: AsyncStream<[UInt8]>

    private let descriptor: OwnedDescriptor
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private let ending = Locked<TransportError?>(nil)
    private let adapterName: String

    /// Why `incoming` finished, when it was not a local `close()` or an orderly end: the kernel's reason
    /// for the disconnection (ETIMEDOUT for a supervision timeout, ECONNRESET when the peer terminated…).
    public var endReason: TransportError? { ending.withLock { $0 } }

    /// Takes ownership of a connected, non-blocking `fd` and starts the reader.
    init(fd: Int32, local: L2CAPAddress, peer: L2CAPAddress, adapterName: String) throws {
        self.descriptor = try OwnedDescriptor(fd)
        self.local = local
        self.peer = peer
        self.adapterName = adapterName
        self.name = "\(adapterName) → \(peer)"
        (incoming, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        continuation.onTermination = { [descriptor] _ in descriptor.close() }
        let thread = Thread { [self] in self.readLoop() }
        thread.name = "l2cap-reader \(name)"
        thread.start()
    }

    deinit { descriptor.close() }

    /// Connects to `peer`'s fixed channel `channel` as an LE client through `adapter` ("hci0", or the
    /// adapter's address "AA:BB:CC:DD:EE:FF"; nil lets the kernel pick the route).
    ///
    /// The kernel makes the LE connection itself (scanning for the peer first if it must), so a connect
    /// can take a while: it gives up after `timeout` on `clock` and closes the socket, which makes the
    /// kernel cancel the attempt. Failures come back as `TransportError` naming the errno: ECONNREFUSED
    /// (the controller would not connect: LE off, not powered), EHOSTUNREACH (no adapter for the route),
    /// ETIMEDOUT (the kernel's own deadline), or kind `.timedOut` for ours.
    public static func connect(
        to peer: L2CAPAddress, adapter: String?, channel: UInt16 = attChannel,
        security: Security = .low, timeout: Duration,
        clock: any BLEClock
    ) async throws -> L2CAPSocket {
        let (adapterName, localAddress) = try resolve(adapter: adapter)
        let what = "connect \(adapterName) → \(peer) on CID 0x\(L2CAPSocket.hex4(channel))"
        let fd = try openSocket(adapterName: adapterName)
        var owned = true
        defer { if owned { _ = Glibc.close(fd) } }

        let bound = localAddress?.bytes ?? [UInt8](repeating: 0, count: 6)
        guard cbt_l2cap_bind(fd, bound, L2CAPAddress.AddressType.public.rawValue, channel) == 0 else {
            throw L2CAPError.from(errno, "\(what): bind", adapter: adapterName)
        }
        guard cbt_l2cap_set_security(fd, security.rawValue) == 0 else {
            throw L2CAPError.from(errno, "\(what): BT_SECURITY \(security)", adapter: adapterName)
        }
        if cbt_l2cap_connect(fd, peer.bytes, peer.type.rawValue, channel) != 0 {
            let e = errno
            guard e == EINPROGRESS else { throw L2CAPError.from(e, what, adapter: adapterName) }
            let connected = try await awaitWritable(fd: fd, timeout: timeout, clock: clock)
            guard connected else {
                throw TransportError(
                    .timedOut, errno: ETIMEDOUT,
                    "\(what): no connection within \(timeout) (ETIMEDOUT): is the peer advertising connectably,"
                        + " in range, and is its address type (\(peer.type)) right?")
            }
            var soError: Int32 = 0
            guard cbt_socket_error(fd, &soError) == 0 else {
                throw L2CAPError.from(errno, "\(what): SO_ERROR", adapter: adapterName)
            }
            if soError != 0 { throw L2CAPError.from(soError, what, adapter: adapterName) }
        }
        let local = address(of: fd, peer: false) ?? localAddress ?? L2CAPAddress(bytes: bound, type: .public)!
        owned = false
        return try L2CAPSocket(fd: fd, local: local, peer: peer, adapterName: adapterName)
    }

    /// Waits for a non-blocking connect on `fd` to finish (the socket becomes writable, or reports an error):
    /// true when it did, false when `timeout` on `clock` came first.
    static func awaitWritable(fd: Int32, timeout: Duration, clock: any BLEClock) async throws -> Bool {
        let readiness = try L2CAPReadiness()
        // The poll's thread and our deadline race; the loser is cancelled (which wakes the poll), and the
        // group returns only once both are done, so the caller never closes the descriptor under the poll.
        let ready = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await readiness.ready(fd: fd, events: Int16(POLLOUT), name: "l2cap-connect") != nil
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        // Cancelling the caller wakes the poll too, which may answer before the sleep reports the cancellation.
        try Task.checkCancellation()
        return ready
    }

    /// Sends one PDU. The socket is non-blocking: when its send buffer is full (the controller has not
    /// taken earlier PDUs) it waits for room up to `sendWait`, then throws rather than block a close.
    public func send(_ pdu: [UInt8]) throws {
        try descriptor.withFD { fd in
            try pdu.withUnsafeBytes { raw in
                var waits = 0
                while true {
                    let n = Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                    if n >= 0 { return }
                    let e = errno
                    if e == EINTR { continue }
                    if e == EAGAIN && waits < Self.sendWaitSlices {
                        // The wait is a syscall parameter on a kernel buffer, not protocol time.
                        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&p, 1, Self.sendWaitSliceMilliseconds)
                        waits += 1
                        continue
                    }
                    throw L2CAPError.from(e, "send to \(name)", adapter: adapterName)
                }
            }
        }
    }

    /// "0004" for CIDs in messages.
    static func hex4(_ v: UInt16) -> String { upperHex(v, digits: 4) }

    static let sendWaitSlices = 50
    static let sendWaitSliceMilliseconds: Int32 = 100

    /// Ends the link (the kernel disconnects it when no other socket uses it) and finishes `incoming`.
    public func close() { descriptor.close() }

    private func readLoop() {
        // Up to the largest L2CAP SDU (Vol 3, Part A, §5.1: MTU is 16 bits); a seqpacket read returns one PDU.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
        defer {
            buffer.deallocate()
            descriptor.release()
            continuation.finish()
        }
        do {
            while true {
                guard let n = try descriptor.read(into: buffer) else { return }
                if n == 0 { return }  // orderly end: the link went down without an error
                continuation.yield(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<n])))
            }
        } catch let error as TransportError {
            let reason: TransportError
            if let e = error.errno {
                reason = L2CAPError.from(e, "link \(name) ended", adapter: adapterName)
            } else {
                reason = error
            }
            ending.withLock { $0 = reason }
        } catch {
            ending.withLock { $0 = TransportError(.io, "link \(name) ended: \(error)") }
        }
    }

    // MARK: - Helpers shared with L2CAPListener

    static func openSocket(adapterName: String) throws -> Int32 {
        let fd = cbt_l2cap_socket()
        guard fd >= 0 else {
            let e = errno
            if e == EAFNOSUPPORT || e == EPROTONOSUPPORT {
                throw TransportError(
                    .unsupported, errno: e,
                    "this kernel has no Bluetooth L2CAP sockets: socket(AF_BLUETOOTH, BTPROTO_L2CAP) failed ("
                        + L2CAPError.describe(e) + "); load the bluetooth module or use a kernel built with CONFIG_BT")
            }
            throw L2CAPError.from(e, "socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)", adapter: adapterName)
        }
        return fd
    }

    /// "hci0" → ("hci0", its public address); "AA:BB:…" → (that text, the address); nil → ("any adapter", nil).
    static func resolve(adapter: String?) throws -> (name: String, address: L2CAPAddress?) {
        guard let adapter else { return ("any adapter", nil) }
        if let index = KernelAdapters.index(of: adapter) {
            var bytes = [UInt8](repeating: 0, count: 6)
            guard cbt_hci_dev_address(Int32(index), &bytes) == 0 else {
                let e = errno
                if e == ENODEV {
                    throw TransportError(
                        .noSuchAdapter, errno: e,
                        "no Bluetooth adapter \(adapter) (\(L2CAPError.describe(e)))")
                }
                throw L2CAPError.from(e, "HCIGETDEVINFO \(adapter)", adapter: adapter)
            }
            return (adapter, L2CAPAddress(bytes: bytes, type: .public))
        }
        if let address = L2CAPAddress(adapter, type: .public) { return (adapter, address) }
        throw TransportError(.badSpec, "bad adapter \"\(adapter)\": expected hciN or its address AA:BB:CC:DD:EE:FF")
    }

    /// getsockname (peer: false) or getpeername (peer: true).
    static func address(of fd: Int32, peer: Bool) -> L2CAPAddress? {
        var bytes = [UInt8](repeating: 0, count: 6)
        var type: UInt8 = 0
        let r = peer ? cbt_l2cap_peer(fd, &bytes, &type) : cbt_l2cap_local(fd, &bytes, &type)
        guard r == 0 else { return nil }
        return L2CAPAddress(bytes: bytes, type: .init(rawValue: type))
    }
}
