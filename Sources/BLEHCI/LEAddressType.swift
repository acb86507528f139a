import BLETransport

/// The address type carried in LE events and commands (Core v5.4, Vol 4, Part E, §7.7.65.2).
public struct LEAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let `public` = LEAddressType(rawValue: 0x00)
    public static let random = LEAddressType(rawValue: 0x01)
    /// Resolved by the controller from a resolvable private address to a public identity.
    public static let publicIdentity = LEAddressType(rawValue: 0x02)
    public static let randomIdentity = LEAddressType(rawValue: 0x03)
    /// Extended reports only: no address was provided (anonymous advertising).
    public static let anonymous = LEAddressType(rawValue: 0xFF)

    /// The name as a static string, for writers that copy bytes (nil for a value without a name).
    public var staticName: StaticString? {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public-identity"
        case .randomIdentity: "random-identity"
        case .anonymous: "anonymous"
        default: nil
        }
    }

    public var description: String {
        staticName.map { "\($0)" } ?? "address-type(0x\(upperHex(rawValue, digits: 2)))"
    }
}
