/// A bearer for ATT PDUs (Core v5.4, Vol 3, Part F, §3.2.11): the ATT fixed channel (CID 0x0004) of an LE
/// link, carried over ACL by this host (exclusive mode, the simulator), or a kernel L2CAP socket (shared
/// mode, where the kernel owns L2CAP). The ATT client runs the same over either.
public protocol ATTBearer: AnyObject, Sendable {
    /// Sends one ATT PDU. The client keeps PDUs within the negotiated ATT_MTU.
    /// Throws when the link is gone.
    func send(_ pdu: [UInt8]) throws
    /// The PDUs the peer sent, in order; finishes when the link ends.
    var incoming: AsyncStream<[UInt8]> { get }
    /// Ends the link. Vol 3, Part F, §3.3.3: after a transaction times out "no more ATT PDUs shall be sent",
    /// and a new transaction needs a new bearer, so the client's remedy for a silent peer is to drop it.
    func drop()
}
