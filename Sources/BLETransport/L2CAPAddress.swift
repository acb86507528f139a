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

    /// Least significant byte first, as in `bdaddr_t` and on the air.
    public let bytes: [UInt8]
    public let type: AddressType

    /// From six bytes, least significant first.
    public init?(bytes: [UInt8], type: AddressType) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
        self.type = type
    }

    /// From the usual text form "AA:BB:CC:DD:EE:FF" (most significant byte first); nil if malformed.
    public init?(_ text: some StringProtocol, type: AddressType) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts.reversed() {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        self.bytes = out
        self.type = type
    }

    /// The text form without the type, most significant byte first.
    public var text: String {
        bytes.reversed().map { b in
            let h = String(b, radix: 16, uppercase: true)
            return h.count == 1 ? "0" + h : h
        }.joined(separator: ":")
    }

    public var description: String { "\(text) (\(type))" }
}
