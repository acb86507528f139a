import CBluetoothShim
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A listening kernel L2CAP socket on an LE fixed channel of one adapter: the server side of ATT for a
/// peripheral of our own (the kernel VM's test peripheral). Each LE link the adapter accepts while this
/// listens gets its own `L2CAPSocket` from `accept()` (net/bluetooth/l2cap_core.c hands every new link's
/// fixed channel to the listener bound to the link's local address, or to one bound to any address).
///
/// Only one listener per adapter and channel gets the links: with bluetoothd running, its GATT server
/// listens on ATT for every adapter, and both would answer.
public final class L2CAPListener: @unchecked Sendable {
    public let local: L2CAPAddress
    public let channel: UInt16
    private let adapterName: String
    private struct State {
        /// The listening descriptor; -1 once closed.
        var fd: Int32
        var closing = false
        /// The accepts in progress, each polling `fd` on a thread of its own.
        var waiters: [ObjectIdentifier: L2CAPReadiness] = [:]

        /// Closes the descriptor once closing and no poll uses it, so its number is never reused under one.
        mutating func closeIfIdle() {
            if closing && waiters.isEmpty && fd >= 0 {
                _ = Glibc.close(fd)
                fd = -1
            }
        }
    }
    private let state: Locked<State>

    /// Listens on `adapter` ("hci1" or its address) for links to `channel`. The kernel offers a link to the
    /// listeners bound to the link's local address type (`l2cap_global_fixed_chan`): `.public` when the
    /// adapter advertises with its public address, `.random` when it uses a static or private one.
    public convenience init(
        adapter: String, channel: UInt16 = L2CAPSocket.attChannel,
        addressType: L2CAPAddress.AddressType = .public, backlog: Int32 = 4
    ) throws {
        let (name, address) = try L2CAPSocket.resolve(adapter: adapter)
        let what = "listen on \(name) CID 0x\(L2CAPSocket.hex4(channel))"
        let fd = try L2CAPSocket.openSocket(adapterName: name)
        let bound = address?.bytes ?? [UInt8](repeating: 0, count: 6)
        guard cbt_l2cap_bind(fd, bound, addressType.rawValue, channel) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw L2CAPError.from(e, "\(what): bind", adapter: name)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw L2CAPError.from(e, what, adapter: name)
        }
        self.init(
            listening: fd,
            local: L2CAPSocket.address(of: fd, peer: false) ?? L2CAPAddress(bytes: bound, type: addressType)!,
            channel: channel, adapterName: name)
    }

    /// Takes ownership of a listening, non-blocking `fd`.
    init(listening fd: Int32, local: L2CAPAddress, channel: UInt16, adapterName: String) {
        self.local = local
        self.channel = channel
        self.adapterName = adapterName
        self.state = Locked(State(fd: fd))
    }

    deinit { close() }

    /// Waits for the next link. Cancelling the task, or `close()`, ends the wait with `CancellationError`
    /// or a `.closed` error.
    public func accept() async throws -> L2CAPSocket {
        let readiness = try L2CAPReadiness()
        let key = ObjectIdentifier(readiness)
        defer {
            state.withLock { s in
                s.waiters.removeValue(forKey: key)
                s.closeIfIdle()
            }
        }
        while true {
            // The descriptor stays open while a waiter is registered: close() wakes the waiters and the
            // last one to leave closes it.
            let fd: Int32 = state.withLock { s in
                guard !s.closing, s.fd >= 0 else { return -1 }
                s.waiters[key] = readiness
                return s.fd
            }
            guard fd >= 0 else { throw TransportError(.closed, "the listener on \(adapterName) is closed") }
            guard try await readiness.ready(fd: fd, events: Int16(POLLIN), name: "l2cap-accept") != nil else {
                try Task.checkCancellation()
                throw TransportError(.closed, "the listener on \(adapterName) is closed")
            }
            var peerBytes = [UInt8](repeating: 0, count: 6)
            var peerType: UInt8 = 0
            let (accepted, e): (Int32, Int32) = state.withLock { s in
                guard !s.closing, s.fd >= 0 else { return (-1, EBADF) }
                let c = cbt_l2cap_accept(s.fd, &peerBytes, &peerType)
                return (c, c < 0 ? errno : 0)
            }
            if accepted < 0 {
                if e == EAGAIN || e == EINTR || e == ECONNABORTED { continue }  // the link went before we took it
                if state.withLock({ $0.closing }) {
                    throw TransportError(.closed, "the listener on \(adapterName) is closed")
                }
                throw L2CAPError.from(e, "accept on \(adapterName)", adapter: adapterName)
            }
            let peer = L2CAPAddress(bytes: peerBytes, type: .init(rawValue: peerType))!
            let local = L2CAPSocket.address(of: accepted, peer: false) ?? self.local
            return try L2CAPSocket(fd: accepted, local: local, peer: peer, adapterName: adapterName)
        }
    }

    /// Stops listening: wakes every `accept()` and closes the descriptor. Links already accepted stay up.
    public func close() {
        state.withLock { s in
            s.closing = true
            for w in s.waiters.values { w.wake() }
            s.closeIfIdle()
        }
    }
}
