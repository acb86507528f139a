/// Something that carries H4 packets to and from a controller: a kernel HCI socket, an H4 byte
/// stream (Unix socket, TCP, UART), or a capture being replayed.
///
/// BlueZ's `bt_hci_new(int fd)` takes an fd; our controller wrapper takes a transport, so tests and
/// the simulator hand it one end of a socket and nothing above this layer knows the difference.
/// A transport owns its file descriptor; nothing else reads or writes it.
public protocol HCITransport: AnyObject, Sendable {
    /// A human-readable name for logs ("hci0 (exclusive)", "unix:/tmp/gw.sock").
    var name: String { get }

    /// Packets from the controller, in order. The queue finishes on end of input (unplug, end of
    /// capture) and throws a `TransportError` on an I/O failure. It may be iterated once. Its `whenFull` says
    /// whether the source waits for the host (a capture, a socket) or drops advertising reports (a live radio).
    var incoming: StageQueue<H4Packet> { get }

    /// Sends one packet to the controller. Throws a `TransportError` when the link is gone.
    func send(_ packet: H4Packet) throws

    /// Closes the link; `incoming` then finishes. Safe to call more than once.
    func close()
}

/// Why a transport failed, with the errno where there is one, so the adapter lifecycle can tell
/// an unplugged controller (ENODEV, EPIPE) from a missing capability (EPERM) or a busy adapter (EBUSY).
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public var description: String { raw }
        public static let noSuchAdapter = Kind(raw: "no such adapter")
        public static let permissionDenied = Kind(raw: "permission denied")
        public static let adapterBusy = Kind(raw: "adapter busy")
        public static let adapterDown = Kind(raw: "adapter down")
        /// ERFKILL: the radio is blocked by rfkill (soft or hard).
        public static let rfkillBlocked = Kind(raw: "blocked by rfkill")
        public static let unsupported = Kind(raw: "unsupported")
        public static let closed = Kind(raw: "closed")
        public static let io = Kind(raw: "i/o error")
        public static let badSpec = Kind(raw: "bad device spec")
        public static let badCapture = Kind(raw: "bad capture file")
    }

    public var kind: Kind
    public var errno: Int32?
    public var message: String

    public init(_ kind: Kind, errno: Int32? = nil, _ message: String) {
        self.kind = kind
        self.errno = errno
        self.message = message
    }

    public var description: String { message }
}
