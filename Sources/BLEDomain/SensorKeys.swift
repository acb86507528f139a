import BLEHCI
import BLETransport
import Crypto
import Foundation

/// Per-device keys for encrypted sensor formats (BTHome v2 bindkey, MiBeacon v4/v5 bindkey), by
/// address. Keys are secrets: nothing here prints them, and `description` shows only how many.
public struct SensorKeys: Sendable, CustomStringConvertible {
    /// The 16 key octets by address (kept as octets: `SymmetricKey` is not `Sendable`).
    @usableFromInline var keys: [BDAddress: [UInt8]]

    public static let none = SensorKeys()

    public init() { keys = [:] }

    /// Nil (naming the offending address, never the key) when a key is not 32 hex digits.
    public init(hex: [BDAddress: String]) throws(SensorKeyError) {
        var k: [BDAddress: [UInt8]] = [:]
        for (address, text) in hex {
            guard let octets = Self.octets(hex: text) else { throw SensorKeyError(address: address) }
            k[address] = octets
        }
        keys = k
    }

    public init(octets: [BDAddress: [UInt8]]) {
        keys = octets.filter { $0.value.count == 16 }
    }

    @inlinable public var isEmpty: Bool { keys.isEmpty }
    @inlinable public var count: Int { keys.count }
    /// The key's octets (Victron checks its first octet before decrypting).
    @inlinable public func octets(for address: BDAddress) -> [UInt8]? { keys[address] }
    @inlinable public func key(for address: BDAddress) -> SymmetricKey? { keys[address].map { SymmetricKey(data: $0) } }

    public var description: String { "SensorKeys(\(keys.count) keys)" }

    static func octets(hex: String) -> [UInt8]? { HexDigits.parseDigits(hex, count: 16) }
}

/// A key that is not 128 bits written as 32 hex digits; says for which address, never the text.
public struct SensorKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public var address: BDAddress
    public var description: String { "bindkey for \(address) is not 32 hexadecimal digits" }
}
