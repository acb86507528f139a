import BLEHCI
import BLETransport
import Crypto
import _CryptoExtras

/// An Identity Resolving Key (Core v5.4, Vol 3, Part H, §2.4.2.1), written most significant octet
/// first as the specification prints it (e.g. `ec0234a357c8ad05341010a60a397d9b`), with the
/// identity address it stands for.
public struct IdentityResolvingKey: Hashable, Sendable {
    /// The 16 key octets, most significant first (the order AES takes them in).
    public let octets: [UInt8]
    /// The peer's identity address (public or random static): what a resolved address becomes.
    public let identity: BDAddress

    public init?(octets: [UInt8], identity: BDAddress) {
        guard octets.count == 16 else { return nil }
        self.octets = octets
        self.identity = identity
    }

    /// Parses 32 hex digits, most significant first.
    public init?(hex: some StringProtocol, identity: BDAddress) {
        guard let bytes = HexDigits.parseDigits(hex, count: 16) else { return nil }
        self.init(octets: bytes, identity: identity)
    }
}

/// The random address hash function `ah` (Core v5.4, Vol 3, Part H, §2.2.2):
///
///     ah(k, r) = e(k, r') mod 2^24,  r' = padding || r
///
/// "r is concatenated with 104 bits of padding [zeros] … The least significant octet of r
/// becomes the least significant octet of r'", and e is AES-128 with key k (§2.2.1). The result is
/// the 24 least significant bits of the ciphertext. Numbers are most significant octet first, as in
/// the specification's AES block.
public enum PrivateAddressHash {
    /// `ah(irk, prand)`: the 24-bit hash for the 24-bit `prand`.
    public static func ah(key: SymmetricKey, prand: UInt32) -> UInt32 {
        var block = [UInt8](repeating: 0, count: 16)
        block[13] = UInt8(truncatingIfNeeded: prand >> 16)
        block[14] = UInt8(truncatingIfNeeded: prand >> 8)
        block[15] = UInt8(truncatingIfNeeded: prand)
        // A 16-octet block and a 128-bit key are all `permute` checks; both are guaranteed here.
        try! AES.permute(&block, key: key)
        return UInt32(block[13]) << 16 | UInt32(block[14]) << 8 | UInt32(block[15])
    }

    /// Whether `address` is a resolvable private address: "the two most significant bits … shall be
    /// equal to 0 and 1" (Vol 6, Part B, §1.3.2.2). Only meaningful for a random address type.
    @inlinable public static func isResolvable(_ address: BDAddress) -> Bool {
        address.rawValue >> 46 == 0b01
    }

    /// Splits a resolvable private address: `hash` is its 24 least significant bits, `prand` the
    /// 24 most significant (Vol 6, Part B, §1.3.2.2, Figure 1.5).
    @inlinable public static func parts(of address: BDAddress) -> (prand: UInt32, hash: UInt32) {
        (
            UInt32(truncatingIfNeeded: address.rawValue >> 24) & 0xFF_FFFF,
            UInt32(truncatingIfNeeded: address.rawValue) & 0xFF_FFFF
        )
    }

    /// Builds the resolvable private address for `prand` (its top two bits forced to 0b01) under `key`:
    /// for tests and the simulator's rotating tags.
    public static func address(key: SymmetricKey, prand: UInt32) -> BDAddress {
        let p = prand & 0x3F_FFFF | 0x40_0000
        return BDAddress(rawValue: UInt64(p) << 24 | UInt64(ah(key: key, prand: p)))
    }
}
