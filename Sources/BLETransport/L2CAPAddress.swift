/// An LE device address as the kernel's L2CAP sockets take it: six bytes and whether they are the
/// device's public address or a random one (Core v5.4, Vol 6, Part B, §1.3). The type is part of the
/// address: the same six bytes as public and as random are two different devices.
public struct L2CAPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address type in `sockaddr_l2.l2_bdaddr_type` (include/net/bluetooth/bluetooth.h): an open set,
    /// unknown values print by number.
    public struct AddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// BDADDR_LE_PUBLIC: an IEEE-assigned address.
        public static let `public` = AddressType(rawValue: 1)
        /// BDADDR_LE_RANDOM: static or private (resolvable / non-resolvable) random address.
        public static let random = AddressType(rawValue: 2)

        public var description: String {
            switch self {
            case .public: "public"
            case .random: "random"
            default: "address type \(rawValue)"
            }
        }
    }

    public let address: BDAddress
    public let type: AddressType

    public init(_ address: BDAddress, type: AddressType) {
        self.address = address
        self.type = type
    }

    /// From six bytes, least significant first.
    public init?(bytes: [UInt8], type: AddressType) {
        guard let address = BDAddress(bytes: bytes) else { return nil }
        self.init(address, type: type)
    }

    /// From the text forms `BDAddress` reads ("AA:BB:CC:DD:EE:FF"); nil if malformed.
    public init?(_ text: some StringProtocol, type: AddressType) {
        guard let address = BDAddress(text) else { return nil }
        self.init(address, type: type)
    }

    /// Least significant byte first, as in `bdaddr_t` and on the air.
    public var bytes: [UInt8] { address.bytes }

    /// The text form without the type, most significant byte first.
    public var text: String { address.description }

    public var description: String { "\(text) (\(type))" }
}
