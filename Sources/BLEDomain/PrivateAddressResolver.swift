import BLEHCI
import BLETransport
import Crypto

/// Resolves resolvable private addresses to identity addresses with the configured IRKs, so that a
/// device that rotates its address (every 15 minutes by default, Vol 3, Part C, Appendix A) stays
/// one beacon for ranging, regions and topics.
///
/// Pure and bounded: each address seen is resolved once (one `ah` — one AES block — per IRK tried,
/// so a rotation costs one AES for a device with one IRK) and the answer, positive or negative, is
/// cached; past `cacheCapacity` addresses the cache is emptied and counted, so a flood of random
/// addresses costs bounded memory and at most one AES per IRK per address.
public struct PrivateAddressResolver: Sendable {
    private(set) var keys: [IdentityResolvingKey]
    public let cacheCapacity: Int
    /// address → index into `keys`, or -1 when no key resolves it.
    var cache: [BDAddress: Int32] = [:]

    /// `ah` evaluations performed (AES blocks).
    public private(set) var hashComputations = 0
    /// Addresses resolved to an identity (cache misses only).
    public private(set) var resolutions = 0
    /// Times the cache was emptied because it was full.
    public private(set) var cacheResets = 0

    public init(keys: [IdentityResolvingKey], cacheCapacity: Int = 4096) {
        precondition(cacheCapacity > 0)
        self.keys = keys
        self.cacheCapacity = cacheCapacity
    }

    /// The identity address behind `address`, or nil when it is not a resolvable private address or
    /// no key resolves it.
    public mutating func resolve(_ address: BDAddress, type: LEAddressType) -> BDAddress? {
        guard !keys.isEmpty, type == .random, PrivateAddressHash.isResolvable(address) else { return nil }
        if let i = cache[address] { return i >= 0 ? keys[Int(i)].identity : nil }
        if cache.count >= cacheCapacity {
            cache.removeAll(keepingCapacity: true)
            cacheResets += 1
        }
        let (prand, hash) = PrivateAddressHash.parts(of: address)
        // Vol 3, Part C, §10.8.2.3: "the Host shall … compute localHash … If localHash equals hash …
        // the address is resolved". Each key is tried in turn.
        for (i, k) in keys.enumerated() {
            hashComputations += 1
            if PrivateAddressHash.ah(key: SymmetricKey(data: k.octets), prand: prand) == hash {
                cache[address] = Int32(i)
                resolutions += 1
                return k.identity
            }
        }
        cache[address] = -1
        return nil
    }

    /// Adds a key while running (an identity enrolled through the broker), replacing one with the same identity
    /// address or the same octets. The cache is emptied: addresses it holds as unresolved may be this key's.
    public mutating func add(_ key: IdentityResolvingKey) {
        if let i = keys.firstIndex(where: { $0.identity == key.identity || $0.octets == key.octets }) {
            keys[i] = key
        } else {
            keys.append(key)
        }
        cache.removeAll(keepingCapacity: true)
    }

    /// The identity a sighting stands for: its beacon identity, or its resolved identity address,
    /// or its own address.
    public mutating func identity(of sighting: Sighting) -> BeaconIdentity {
        let id = sighting.identity
        if case .address = id, let resolved = resolve(sighting.address, type: sighting.addressType) {
            return .address(resolved)
        }
        return id
    }
}
