/// Which advertising format a sensor reading came from: an open set of codes, one per decoder.
public struct SensorFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// BTHome v2, service data 0xFCD2 (bthome.io/format).
    public static let bthome = Self(rawValue: 1)
    /// atc1441's custom format for the LYWSD03MMC, service data 0x181A, 13 octets, big-endian.
    public static let atc1441 = Self(rawValue: 2)
    /// pvvx's custom format, service data 0x181A, 15 octets, little-endian.
    public static let pvvx = Self(rawValue: 3)
    /// Xiaomi MiBeacon, service data 0xFE95.
    public static let miBeacon = Self(rawValue: 4)
    /// RuuviTag data format 5 (RAWv2), manufacturer 0x0499.
    public static let ruuviV5 = Self(rawValue: 5)
    /// RuuviTag data format 3 (RAWv1, older firmware), manufacturer 0x0499.
    public static let ruuviV3 = Self(rawValue: 13)
    /// RuuviTag data format 6 (Ruuvi Air, legacy advertising), manufacturer 0x0499.
    public static let ruuviV6 = Self(rawValue: 10)
    /// RuuviTag data format E1 (Ruuvi Air, extended advertising), manufacturer 0x0499.
    public static let ruuviE1 = Self(rawValue: 11)
    /// Victron Instant Readout (encrypted, per-device key), manufacturer 0x02E1.
    public static let victron = Self(rawValue: 12)
    /// Govee thermo-hygrometers, manufacturer 0xEC88 and 0x0001.
    public static let govee = Self(rawValue: 6)
    /// Qingping, service data 0xFDCD.
    public static let qingping = Self(rawValue: 7)
    /// SwitchBot Meter / Meter Plus / Outdoor, service data 0xFD3D (0x0D00 on old firmware).
    public static let switchBot = Self(rawValue: 8)
    /// Inkbird IBS-TH / IBS-TH2, manufacturer data whose "company id" is the temperature.
    public static let inkbird = Self(rawValue: 9)

    public var description: String {
        switch self {
        case .bthome: "bthome"
        case .atc1441: "atc1441"
        case .pvvx: "pvvx"
        case .miBeacon: "mibeacon"
        case .ruuviV3: "ruuvi-3"
        case .ruuviV5: "ruuvi-5"
        case .ruuviV6: "ruuvi-6"
        case .ruuviE1: "ruuvi-e1"
        case .victron: "victron"
        case .govee: "govee"
        case .qingping: "qingping"
        case .switchBot: "switchbot"
        case .inkbird: "inkbird"
        default: "format-\(rawValue)"
        }
    }
}

/// Faults met while decoding one sensor frame. What was read before them is kept.
public struct SensorIssues: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The frame ended inside an object or a fixed-size field.
    public static let truncated = Self(rawValue: 1 << 0)
    /// A BTHome object id outside the specification: "stop parsing", keeping what came before it.
    public static let unknownObject = Self(rawValue: 1 << 1)
    /// Encrypted, and no key is configured for the address.
    public static let keyMissing = Self(rawValue: 1 << 2)
    /// Encrypted, and the MIC did not verify under the configured key (wrong key or corrupted frame).
    public static let authenticationFailed = Self(rawValue: 1 << 3)
    /// A value outside its physical range (or a "not available" sentinel): flagged, never published as real.
    public static let outOfRange = Self(rawValue: 1 << 4)
    /// A version or layout this decoder does not know.
    public static let unsupported = Self(rawValue: 1 << 5)

    /// Encrypted and not readable: the `undecryptable` reason published and counted.
    @inlinable public var isUndecryptable: Bool { !intersection([.keyMissing, .authenticationFailed]).isEmpty }
}
