/// The ATT bearer of one LE link carried over ACL by this host (Core v5.4, Vol 3, Part F, §3.2.11): the fixed
/// channel CID 0x0004 (Vol 3, Part A, §2.1). Made by `LELinks.bearer(for:)`; everything goes through the links'
/// owner, so flow control applies and there is one writer.
public final class ACLBearer: ATTBearer, @unchecked Sendable {
    public let handle: UInt16
    public let incoming: AsyncStream<[UInt8]>
    let continuation: AsyncStream<[UInt8]>.Continuation
    // Weak: the owner keeps its bearers, not the other way round. Immutable after init.
    private weak let owner: LELinks?

    init(handle: UInt16, owner: LELinks?, bufferSize: Int) {
        self.handle = handle
        self.owner = owner
        (incoming, continuation) = AsyncStream.makeStream(
            of: [UInt8].self, bufferingPolicy: .bufferingNewest(bufferSize))
    }

    /// Queues one ATT PDU on the link. Throws `LELinkError` (`.linkClosed`, `.queueFull`, `.tooLong`).
    public func send(_ pdu: [UInt8]) throws {
        guard let owner else { throw LELinkError(code: .linkClosed, handle: handle) }
        try owner.sendATT(pdu, on: self)
    }

    /// Asks the controller to end the link (HCI Disconnect, reason 0x13); `send` throws from now on and
    /// `incoming` finishes when Disconnection Complete arrives.
    public func drop() {
        owner?.drop(self)
    }
}
