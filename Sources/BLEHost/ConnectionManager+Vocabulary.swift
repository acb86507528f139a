import BLEHCI
import BLETransport

/// What the connection manager is told, what it asks for and what it publishes.
extension ConnectionManager {
    public struct Configuration: Sendable, Hashable {
        public var maxConnections: Int = 4
        /// LE Create Connection Cancel after this long without a Connection Complete.
        public var connectTimeout: Duration = .seconds(5)
        /// An advertisement older than this does not make a peer a candidate.
        public var advertisementFreshness: Duration = .seconds(10)
        public var initialBackoff: Duration = .milliseconds(500)
        public var maxBackoff: Duration = .seconds(60)
        /// A link that lasted at least this long counts as a success: backoff and attempts reset.
        public var stableLink: Duration = .seconds(10)
        public var parameters = LEConnectionParameters()
        public init() {}
    }

    /// CoreBluetooth's CBPeripheralState, which the gateway publishes.
    public struct LinkState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let disconnected = LinkState(rawValue: "disconnected")
        public static let connecting = LinkState(rawValue: "connecting")
        public static let connected = LinkState(rawValue: "connected")
        public static let disconnecting = LinkState(rawValue: "disconnecting")
        public var description: String { rawValue }
    }

    /// Why a peer is in its state: an HCI status or reason from the controller, or the gateway's own doing.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        case hci(HCIStatus)
        /// The adapter went away (power, unplug, reset): every link is gone with it.
        case adapterLost
        /// No LE Connection Complete within the connect timeout; the attempt was cancelled.
        case connectTimeout
        /// The gateway dropped the link: its ATT client gave up (30 s transaction timeout) or a protocol error.
        case dropped(String)
        /// The intent was removed by configuration.
        case notWanted
        /// A state an earlier run of the gateway left retained, for a device this run has not met.
        case gatewayRestarted
        /// The gateway is stopping (a graceful shutdown): it ended the link itself.
        case gatewayStopped
        /// Two adapters: the links move to the other adapter; the gateway ended this one itself to make it there.
        case handedOver
        /// Shared mode: the kernel made the link and said why it failed or ended, as an errno
        /// ("ECONNREFUSED, Connection refused (errno 111)"); the kernel maps HCI reasons onto errnos.
        case kernel(String)

        public var description: String {
            switch self {
            case .hci(let s): "HCI 0x\(upperHex(s.rawValue, digits: 2)) \(s.name ?? "unknown status")"
            case .adapterLost: "adapter lost"
            case .connectTimeout: "connection attempt timed out"
            case .dropped(let why): "dropped by the gateway: \(why)"
            case .notWanted: "no longer wanted"
            case .gatewayRestarted: "the gateway restarted and has not met the device since"
            case .gatewayStopped: "the gateway stopped"
            case .handedOver: "handed over to the other adapter"
            case .kernel(let why): "kernel: \(why)"
            }
        }

        /// The HCI code, when there is one.
        public var code: UInt8? {
            if case .hci(let s) = self { return s.rawValue }
            return nil
        }
    }

    public struct Peer: Hashable, Sendable {
        public var address: BDAddress
        public var addressType: LEAddressType
        public init(address: BDAddress, addressType: LEAddressType) {
            self.address = address
            self.addressType = addressType
        }
    }

    /// What the gateway publishes for one peer.
    public struct Status: Sendable, Hashable {
        public var state: LinkState
        public var reason: Reason?
        /// Connection attempts since the link was last stable (the one that succeeded included).
        public var attempts: Int
        /// Clock time of the last state change.
        public var since: Duration
        public var handle: UInt16?

        public init(state: LinkState, reason: Reason?, attempts: Int, since: Duration, handle: UInt16? = nil) {
            self.state = state
            self.reason = reason
            self.attempts = attempts
            self.since = since
            self.handle = handle
        }
    }

    public enum Event: Sendable {
        /// Keep this peer connected.
        case want(Peer)
        /// Stop keeping it connected (disconnect if it is).
        case unwant(BDAddress)
        /// A connectable advertisement from the peer.
        case advertised(Peer)
        /// Command Status for LE Create Connection.
        case createStatus(HCIStatus)
        /// LE (Enhanced) Connection Complete.
        case connectionComplete(status: HCIStatus, handle: UInt16, peer: BDAddress)
        /// Command Status for Disconnect: a failure (unknown handle) means the link is already gone.
        case disconnectStatus(handle: UInt16, HCIStatus)
        case disconnectionComplete(handle: UInt16, reason: HCIStatus)
        /// Shared mode: the attempt to `peer` ended without a link; nil: it ended because it was cancelled (as
        /// asked by `.cancelCreateConnection`), the kernel's counterpart of status 0x02 after a Cancel.
        case connectionFailed(peer: BDAddress, Reason?)
        /// Shared mode: a link ended, for the kernel's reason (a remote end is ECONNRESET, a supervision timeout
        /// ETIMEDOUT); after our own `.disconnect` the reason the gateway gave stands.
        case linkEnded(handle: UInt16, Reason)
        /// The gateway gives up on a link (ATT timeout, protocol error): disconnect it.
        case drop(handle: UInt16, why: String)
        /// The controller is ready (brought up, or back after a recovery).
        case adapterUp
        /// The controller is gone: every link and attempt with it.
        case adapterDown
        /// The gateway is stopping: end every link (Disconnect, reason 0x15 Remote Device Terminated Connection due
        /// to Power Off), cancel the attempt in flight, make no new one.
        case shutdown
        /// Two adapters: the connections move to the other one. End every link on this controller (Disconnect,
        /// reason 0x13 Remote User Terminated Connection), cancel the attempt in flight, make no new one here; the
        /// next `adapterUp` (on the other controller, after this one's `adapterDown`) makes them again.
        case handOver
        case tick
    }

    public enum Action: Sendable, Hashable {
        case createConnection(Peer, LEConnectionParameters)
        case cancelCreateConnection
        case disconnect(handle: UInt16, reason: HCIStatus)
        /// A link is up: start its ATT bearer and GATT work.
        case linkUp(handle: UInt16, Peer)
        /// A link is down: its GATT work ends.
        case linkDown(handle: UInt16, Peer)
        /// Publish this peer's status.
        case publish(BDAddress, Status)
    }

    public struct Counters: Sendable, Hashable {
        public var attempts = 0
        public var connections = 0
        public var failedAttempts = 0
        public var cancelledAttempts = 0
        public var disconnections = 0
        public init() {}
    }
}
