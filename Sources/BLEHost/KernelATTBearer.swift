import BLETransport

/// The ATT bearer of shared mode: a kernel L2CAP socket on the ATT fixed channel (CID 0x0004). The kernel
/// owns the LE link and L2CAP; each socket read or write is one ATT PDU, so the bearer only hands them on.
public final class KernelATTBearer: ATTBearer {
    public let socket: L2CAPSocket

    /// Takes over `socket`: `drop()` closes it.
    public init(socket: L2CAPSocket) {
        self.socket = socket
    }

    /// Opens the kernel link to `peer`'s ATT server through `adapter` ("hci0") and wraps it.
    public static func connect(
        to peer: L2CAPAddress, adapter: String?, security: L2CAPSocket.Security = .low,
        timeout: Duration, clock: any BLEClock
    ) async throws -> KernelATTBearer {
        let socket = try await L2CAPSocket.connect(
            to: peer, adapter: adapter, channel: L2CAPSocket.attChannel,
            security: security, timeout: timeout, clock: clock)
        return KernelATTBearer(socket: socket)
    }

    public func send(_ pdu: [UInt8]) throws { try socket.send(pdu) }

    public var incoming: AsyncStream<[UInt8]> { socket.incoming }

    /// Why the link ended, if it ended with an error (see `L2CAPSocket.endReason`).
    public var endReason: TransportError? { socket.endReason }

    public func drop() { socket.close() }
}
