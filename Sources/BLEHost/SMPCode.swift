import BLETransport

/// A Security Manager Protocol command code (Core v5.4, Vol 3, Part H, §3.3, Table 3.4). An open set: an unknown
/// code prints by number.
public struct SMPCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let pairingRequest = SMPCode(rawValue: 0x01)
    public static let pairingResponse = SMPCode(rawValue: 0x02)
    public static let pairingConfirm = SMPCode(rawValue: 0x03)
    public static let pairingRandom = SMPCode(rawValue: 0x04)
    public static let pairingFailed = SMPCode(rawValue: 0x05)
    public static let encryptionInformation = SMPCode(rawValue: 0x06)
    public static let centralIdentification = SMPCode(rawValue: 0x07)
    public static let identityInformation = SMPCode(rawValue: 0x08)
    public static let identityAddressInformation = SMPCode(rawValue: 0x09)
    public static let signingInformation = SMPCode(rawValue: 0x0A)
    public static let securityRequest = SMPCode(rawValue: 0x0B)
    public static let pairingPublicKey = SMPCode(rawValue: 0x0C)
    public static let pairingDHKeyCheck = SMPCode(rawValue: 0x0D)
    public static let keypressNotification = SMPCode(rawValue: 0x0E)

    static let names: [SMPCode: String] = [
        .pairingRequest: "Pairing Request", .pairingResponse: "Pairing Response", .pairingConfirm: "Pairing Confirm",
        .pairingRandom: "Pairing Random", .pairingFailed: "Pairing Failed",
        .encryptionInformation: "Encryption Information", .centralIdentification: "Central Identification",
        .identityInformation: "Identity Information", .identityAddressInformation: "Identity Address Information",
        .signingInformation: "Signing Information", .securityRequest: "Security Request",
        .pairingPublicKey: "Pairing Public Key", .pairingDHKeyCheck: "Pairing DHKey Check",
        .keypressNotification: "Keypress Notification",
    ]

    public var description: String {
        "0x\(upperHex(rawValue, digits: 2)) \(Self.names[self] ?? "reserved")"
    }
}

/// Pairing Failed reasons (§3.5.5, Table 3.7): why a pairing ended, by number and name.
public struct SMPFailureReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let passkeyEntryFailed = SMPFailureReason(rawValue: 0x01)
    public static let oobNotAvailable = SMPFailureReason(rawValue: 0x02)
    public static let authenticationRequirements = SMPFailureReason(rawValue: 0x03)
    public static let confirmValueFailed = SMPFailureReason(rawValue: 0x04)
    public static let pairingNotSupported = SMPFailureReason(rawValue: 0x05)
    public static let encryptionKeySize = SMPFailureReason(rawValue: 0x06)
    public static let commandNotSupported = SMPFailureReason(rawValue: 0x07)
    public static let unspecifiedReason = SMPFailureReason(rawValue: 0x08)
    public static let repeatedAttempts = SMPFailureReason(rawValue: 0x09)
    public static let invalidParameters = SMPFailureReason(rawValue: 0x0A)
    public static let dhKeyCheckFailed = SMPFailureReason(rawValue: 0x0B)
    public static let numericComparisonFailed = SMPFailureReason(rawValue: 0x0C)
    public static let brEDRPairingInProgress = SMPFailureReason(rawValue: 0x0D)
    public static let crossTransportKeyDerivationNotAllowed = SMPFailureReason(rawValue: 0x0E)
    public static let keyRejected = SMPFailureReason(rawValue: 0x0F)

    static let names: [SMPFailureReason: String] = [
        .passkeyEntryFailed: "Passkey Entry Failed", .oobNotAvailable: "OOB Not Available",
        .authenticationRequirements: "Authentication Requirements", .confirmValueFailed: "Confirm Value Failed",
        .pairingNotSupported: "Pairing Not Supported", .encryptionKeySize: "Encryption Key Size",
        .commandNotSupported: "Command Not Supported", .unspecifiedReason: "Unspecified Reason",
        .repeatedAttempts: "Repeated Attempts", .invalidParameters: "Invalid Parameters",
        .dhKeyCheckFailed: "DHKey Check Failed", .numericComparisonFailed: "Numeric Comparison Failed",
        .brEDRPairingInProgress: "BR/EDR pairing in progress",
        .crossTransportKeyDerivationNotAllowed: "Cross-transport Key Derivation/Generation not allowed",
        .keyRejected: "Key Rejected",
    ]

    public var name: String? { Self.names[self] }

    public var description: String { "SMP 0x\(upperHex(rawValue, digits: 2)) \(name ?? "reserved")" }
}

/// IO Capability (§3.5.1, Table 3.4): what a device can show and take, which picks the association model.
public struct SMPIOCapability: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let displayOnly = SMPIOCapability(rawValue: 0x00)
    public static let displayYesNo = SMPIOCapability(rawValue: 0x01)
    public static let keyboardOnly = SMPIOCapability(rawValue: 0x02)
    public static let noInputNoOutput = SMPIOCapability(rawValue: 0x03)
    public static let keyboardDisplay = SMPIOCapability(rawValue: 0x04)
}

/// AuthReq (§3.5.1, Figure 3.3): Bonding_Flags (2 bits), MITM, SC, Keypress, CT2.
public struct SMPAuthRequirements: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bonding_Flags 0b01: "Bonding" (the keys are kept).
    public static let bonding = SMPAuthRequirements(rawValue: 0x01)
    public static let mitm = SMPAuthRequirements(rawValue: 0x04)
    public static let secureConnections = SMPAuthRequirements(rawValue: 0x08)
    public static let keypress = SMPAuthRequirements(rawValue: 0x10)
    public static let ct2 = SMPAuthRequirements(rawValue: 0x20)

    public func contains(_ flag: SMPAuthRequirements) -> Bool { rawValue & flag.rawValue == flag.rawValue }
    public static func | (a: SMPAuthRequirements, b: SMPAuthRequirements) -> SMPAuthRequirements {
        SMPAuthRequirements(rawValue: a.rawValue | b.rawValue)
    }
}

/// Key Distribution / Generation (§3.6.1, Figure 3.11): which keys each side hands over after encryption.
public struct SMPKeyDistribution: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let none = SMPKeyDistribution(rawValue: 0x00)
    public static let encKey = SMPKeyDistribution(rawValue: 0x01)
    /// The IRK and the identity address: what enrolment is for.
    public static let idKey = SMPKeyDistribution(rawValue: 0x02)
    public static let signKey = SMPKeyDistribution(rawValue: 0x04)
    public static let linkKey = SMPKeyDistribution(rawValue: 0x08)

    public func contains(_ key: SMPKeyDistribution) -> Bool { rawValue & key.rawValue == key.rawValue }
    public static func & (a: SMPKeyDistribution, b: SMPKeyDistribution) -> SMPKeyDistribution {
        SMPKeyDistribution(rawValue: a.rawValue & b.rawValue)
    }
}
