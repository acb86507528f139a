import BLEDomain
import BLETransport

/// What the gateway says about its adapter on the retained `…/adapter` topic (schema/v1/adapter.json).
/// iOS's CBManagerState, plus what a Linux gateway can tell apart: blocked (rfkill) and absent.
public struct AdapterReport: Sendable, Equatable {
    /// The one adapter state vocabulary: the lifecycle's, published as it decides it.
    public typealias State = AdapterLifecycle.Status

    /// How the gateway scans with it (the topic's `scanning`): an open set, published by name.
    public struct Scanning: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// LE Set Scan Parameters / Enable (Core v5.4, Vol 4, Part E, §7.8.10–11).
        public static let legacy = Scanning(rawValue: "legacy")
        /// LE Set Extended Scan Parameters / Enable (§7.8.64–65).
        public static let extended = Scanning(rawValue: "extended")
        /// Shared mode or a capture: the kernel (or the recording) scans, the gateway listens.
        public static let observer = Scanning(rawValue: "observer")
        public static let off = Scanning(rawValue: "off")
        public var description: String { rawValue }

        /// The kind a controller that has come up scans with.
        public static func of(_ supportsExtendedAdvertising: Bool) -> Scanning {
            supportsExtendedAdvertising ? .extended : .legacy
        }
    }

    public var state: State
    public var device: String
    public var mode: AdapterMode
    public var address: String?
    public var hciVersion: Int?
    public var manufacturer: Int?
    public var scanning: Scanning
    public var reason: String?
    /// With two adapters: which one this is (the primary scans, the secondary connects, when both are usable) and
    /// the duties it carries now. Nil with one adapter.
    public var slot: AdapterRoles.Slot?
    public var roles: AdapterRoles.Duties?
    /// The gateway's adapter topic (`…/adapter`: the adapter that scans) or, with two adapters, this adapter's own
    /// (`…/adapters/<slot>`).
    public var scope: Scope = .gateway

    public enum Scope: Sendable, Equatable {
        case gateway
        case slot
    }

    public init(
        state: State, device: String, mode: AdapterMode, address: String? = nil, hciVersion: Int? = nil,
        manufacturer: Int? = nil, scanning: Scanning = .off, reason: String? = nil
    ) {
        self.state = state
        self.device = device
        self.mode = mode
        self.address = address
        self.hciVersion = hciVersion
        self.manufacturer = manufacturer
        self.scanning = scanning
        self.reason = reason
    }
}
