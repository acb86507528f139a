import BLEHCI
import BLETransport

/// What Pairing Request and Pairing Response carry (Core v5.4, Vol 3, Part H, §3.5.1, §3.5.2).
public struct SMPPairingFeatures: Hashable, Sendable {
    public var ioCapability: SMPIOCapability
    /// OOB data flag: 0x01 when out-of-band data is present.
    public var oobDataPresent: Bool
    public var authRequirements: SMPAuthRequirements
    /// 7…16 octets.
    public var maxEncryptionKeySize: UInt8
    public var initiatorKeys: SMPKeyDistribution
    public var responderKeys: SMPKeyDistribution

    public init(
        ioCapability: SMPIOCapability, oobDataPresent: Bool = false, authRequirements: SMPAuthRequirements,
        maxEncryptionKeySize: UInt8 = 16, initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution
    ) {
        self.ioCapability = ioCapability
        self.oobDataPresent = oobDataPresent
        self.authRequirements = authRequirements
        self.maxEncryptionKeySize = maxEncryptionKeySize
        self.initiatorKeys = initiatorKeys
        self.responderKeys = responderKeys
    }

    /// The six octets after the code, in order: also the `preq`/`pres` the IOcap of f6 is taken from.
    var octets: [UInt8] {
        [
            ioCapability.rawValue, oobDataPresent ? 0x01 : 0x00, authRequirements.rawValue, maxEncryptionKeySize,
            initiatorKeys.rawValue, responderKeys.rawValue,
        ]
    }

    /// IOcap of f6 (§2.2.8): AuthReq, OOB data flag, IO capability, most significant octet first.
    var ioCap: [UInt8] { [authRequirements.rawValue, oobDataPresent ? 0x01 : 0x00, ioCapability.rawValue] }
}

/// One SMP command (§3.3): its code and parameters. Keys, nonces and values are held most significant octet first,
/// as the specification prints them and as the security functions take them; on the air they go least
/// significant octet first (§3.1: "multi-octet fields … shall be sent in little-endian"), reversed here.
public enum SMPPDU: Hashable, Sendable {
    case pairingRequest(SMPPairingFeatures)
    case pairingResponse(SMPPairingFeatures)
    case pairingConfirm([UInt8])
    case pairingRandom([UInt8])
    case pairingFailed(SMPFailureReason)
    case encryptionInformation(ltk: [UInt8])
    case centralIdentification(ediv: UInt16, rand: UInt64)
    case identityInformation(irk: [UInt8])
    case identityAddressInformation(LEAddressType, BDAddress)
    case signingInformation(csrk: [UInt8])
    case securityRequest(SMPAuthRequirements)
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    case pairingDHKeyCheck([UInt8])
    case keypressNotification(UInt8)

    public var code: SMPCode {
        switch self {
        case .pairingRequest: .pairingRequest
        case .pairingResponse: .pairingResponse
        case .pairingConfirm: .pairingConfirm
        case .pairingRandom: .pairingRandom
        case .pairingFailed: .pairingFailed
        case .encryptionInformation: .encryptionInformation
        case .centralIdentification: .centralIdentification
        case .identityInformation: .identityInformation
        case .identityAddressInformation: .identityAddressInformation
        case .signingInformation: .signingInformation
        case .securityRequest: .securityRequest
        case .pairingPublicKey: .pairingPublicKey
        case .pairingDHKeyCheck: .pairingDHKeyCheck
        case .keypressNotification: .keypressNotification
        }
    }

    /// Why a command could not be parsed: a code this host does not know, or parameters of the wrong length.
    public enum ParseError: Error, Hashable, Sendable {
        case empty
        case unknownCode(SMPCode)
        case badLength(SMPCode, Int)

        /// The Pairing Failed reason that answers it (§3.5.5).
        public var reason: SMPFailureReason {
            switch self {
            case .unknownCode: .commandNotSupported
            case .empty, .badLength: .invalidParameters
            }
        }
    }

    /// Parses one SMP command; every command has a fixed length, and one with more or fewer octets is refused.
    public static func parse(_ bytes: ArraySlice<UInt8>) -> Result<SMPPDU, ParseError> {
        var c = ByteCursor(bytes)
        guard let raw = c.readU8() else { return .failure(.empty) }
        let code = SMPCode(rawValue: raw)
        guard let length = parameterLengths[code] else { return .failure(.unknownCode(code)) }
        guard c.remaining == length else { return .failure(.badLength(code, c.remaining)) }
        // The length was checked: every read below succeeds.
        func value(_ n: Int) -> [UInt8] { c.readBytes(n)!.reversed() }
        func features() -> SMPPairingFeatures {
            let p = c.readBytes(6)!.map { $0 }
            return SMPPairingFeatures(
                ioCapability: .init(rawValue: p[0]), oobDataPresent: p[1] == 0x01,
                authRequirements: .init(rawValue: p[2]), maxEncryptionKeySize: p[3],
                initiatorKeys: .init(rawValue: p[4]), responderKeys: .init(rawValue: p[5]))
        }
        let pdu: SMPPDU
        switch code {
        case .pairingRequest: pdu = .pairingRequest(features())
        case .pairingResponse: pdu = .pairingResponse(features())
        case .pairingConfirm: pdu = .pairingConfirm(value(16))
        case .pairingRandom: pdu = .pairingRandom(value(16))
        case .pairingFailed: pdu = .pairingFailed(.init(rawValue: c.readU8()!))
        case .encryptionInformation: pdu = .encryptionInformation(ltk: value(16))
        case .centralIdentification:
            let ediv = c.readLE16()!
            pdu = .centralIdentification(ediv: ediv, rand: c.readLE64()!)
        case .identityInformation: pdu = .identityInformation(irk: value(16))
        case .identityAddressInformation:
            let type = LEAddressType(rawValue: c.readU8()!)
            pdu = .identityAddressInformation(type, BDAddress(bytes: Array(c.readBytes(6)!))!)
        case .signingInformation: pdu = .signingInformation(csrk: value(16))
        case .securityRequest: pdu = .securityRequest(.init(rawValue: c.readU8()!))
        case .pairingPublicKey:
            let x = value(32)
            pdu = .pairingPublicKey(x: x, y: value(32))
        case .pairingDHKeyCheck: pdu = .pairingDHKeyCheck(value(16))
        default: pdu = .keypressNotification(c.readU8()!)
        }
        return .success(pdu)
    }

    /// The command's octets, as sent on the SMP channel.
    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 1 + (Self.parameterLengths[code] ?? 0))
        w.u8(code.rawValue)
        func value(_ v: [UInt8], _ n: Int) {
            precondition(v.count == n, "\(code) carries \(n) octets")
            w.append(v.reversed())
        }
        switch self {
        case .pairingRequest(let f), .pairingResponse(let f): w.append(f.octets)
        case .pairingConfirm(let v), .pairingRandom(let v), .pairingDHKeyCheck(let v): value(v, 16)
        case .pairingFailed(let reason): w.u8(reason.rawValue)
        case .encryptionInformation(let k), .identityInformation(let k), .signingInformation(let k): value(k, 16)
        case .centralIdentification(let ediv, let rand):
            w.le16(ediv)
            w.le64(rand)
        case .identityAddressInformation(let type, let address):
            w.u8(type.rawValue)
            w.append(address.bytes)
        case .securityRequest(let a): w.u8(a.rawValue)
        case .pairingPublicKey(let x, let y):
            value(x, 32)
            value(y, 32)
        case .keypressNotification(let t): w.u8(t)
        }
        return w.bytes
    }

    /// Parameter octets per code (§3.5, §3.6: each command's figure).
    static let parameterLengths: [SMPCode: Int] = [
        .pairingRequest: 6, .pairingResponse: 6, .pairingConfirm: 16, .pairingRandom: 16, .pairingFailed: 1,
        .encryptionInformation: 16, .centralIdentification: 10, .identityInformation: 16,
        .identityAddressInformation: 7, .signingInformation: 16, .securityRequest: 1, .pairingPublicKey: 64,
        .pairingDHKeyCheck: 16, .keypressNotification: 1,
    ]
}
