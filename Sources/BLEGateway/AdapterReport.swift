import BLEDomain

/// What the gateway says about its adapter on the retained `…/adapter` topic (schema/v1/adapter.json).
/// iOS's CBManagerState, plus what a Linux gateway can tell apart: blocked (rfkill) and absent.
public struct AdapterReport: Sendable, Equatable {
    /// The one adapter state vocabulary: the lifecycle's, published as it decides it.
    public typealias State = AdapterLifecycle.Status

    public var state: State
    public var device: String
    public var mode: String
    public var address: String?
    public var hciVersion: Int?
    public var manufacturer: Int?
    /// "legacy", "extended", "observer" (shared mode: the kernel scans) or "off".
    public var scanning: String
    public var reason: String?
    /// With two adapters: which one this is ("primary" scans, "secondary" connects, when both are usable) and the
    /// duties it carries now ("scan", "connect"). Nil with one adapter.
    public var slot: String?
    public var roles: [String]?
    /// The gateway's adapter topic (`…/adapter`: the adapter that scans) or, with two adapters, this adapter's own
    /// (`…/adapters/<slot>`).
    public var scope: Scope = .gateway

    public enum Scope: Sendable, Equatable {
        case gateway
        case slot
    }

    public init(
        state: State, device: String, mode: String, address: String? = nil, hciVersion: Int? = nil,
        manufacturer: Int? = nil, scanning: String = "off", reason: String? = nil
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
