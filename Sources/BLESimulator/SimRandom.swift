import Foundation

/// Deterministic, counter-based randomness for the virtual radio.
///
/// Every draw is a pure function of (seed, stream, counter), not of a shared generator's history,
/// so what one gateway hears does not depend on whether another gateway happened to be scanning
/// when it drew: the same `--seed` gives the same world whatever the gateways do. SplitMix64's
/// finaliser (Steele, Lea, Flood 2014) mixes the key; it passes BigCrush as a hash of a counter.
public struct SimRandom: Sendable, Hashable {
    public let seed: UInt64

    public init(seed: UInt64) { self.seed = seed }

    @inlinable static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 64 random bits for one key.
    @inlinable public func bits(_ stream: UInt64, _ a: UInt64, _ b: UInt64 = 0) -> UInt64 {
        Self.mix(Self.mix(Self.mix(seed ^ stream) ^ a) ^ b)
    }

    /// Uniform in [0, 1).
    @inlinable public func uniform(_ stream: UInt64, _ a: UInt64, _ b: UInt64 = 0) -> Double {
        Double(bits(stream, a, b) >> 11) * 0x1.0p-53
    }

    /// Standard normal by Box–Muller from two independent uniforms of the same key.
    @inlinable public func gaussian(_ stream: UInt64, _ a: UInt64, _ b: UInt64 = 0) -> Double {
        let r = bits(stream, a, b)
        let u1 = (Double(r >> 11) + 1) * 0x1.0p-53  // (0, 1]: log is finite
        let u2 = Double(Self.mix(r) >> 11) * 0x1.0p-53
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}

/// Streams keep unrelated draws independent even when their counters coincide.
public enum RandomStream {
    public static let advDelay: UInt64 = 0xAD0E_1A70
    public static let loss: UInt64 = 0x1055
    public static let shadowing: UInt64 = 0x5AD0
    public static let scanResponseLoss: UInt64 = 0x5C47_1055
    public static let scanResponseShadowing: UInt64 = 0x5C47_5AD0
    public static let link: UInt64 = 0x11_4C
    public static let placement: UInt64 = 0x9_1ACE
    public static let address: UInt64 = 0xADD2
}
