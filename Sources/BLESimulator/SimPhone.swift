import BLETransport
import Crypto

/// A phone or watch: it advertises from resolvable private addresses derived from its IRK, a new one every
/// `rotation` seconds (Core v5.4, Vol 3, Part C, §10.7: the address changes on a timer), and, while a gateway
/// advertises for enrolment within its range, connects to it as a central and pairs.
public struct PhoneSpec: Sendable {
    /// How the phone's user and its stack answer a pairing.
    public enum Pairing: String, Sendable, CaseIterable {
        /// LE Secure Connections, Numeric Comparison confirmed, identity distributed: what phones do.
        case secureConnections = "secure_connections"
        /// An old stack that offers only LE legacy pairing (no SC bit).
        case legacyOnly = "legacy_only"
        /// The user taps "Cancel" when the six digits appear.
        case declines
        /// Pairs, but distributes no identity key (Initiator Key Distribution without IdKey).
        case withholdsIdentity = "withholds_identity"
        /// A device that can only type (IO capability KeyboardOnly): Passkey Entry, its user types what the gateway
        /// displays (`GatewayNode.typePasskey`).
        case keyboardOnly = "keyboard_only"
    }

    /// The Identity Resolving Key, most significant octet first.
    public var irk: [UInt8]
    /// The identity address (the emitter's `address`) and its type, 0x00 public or 0x01 random static.
    public var identityType: UInt8
    /// Seconds between address changes.
    public var rotation: Double
    /// nil: the phone never pairs.
    public var pairing: Pairing?
    /// An iPhone's way (`pairs_when: asked`): it starts no pairing of its own accord. Connected, it reads the Body
    /// Sensor Location (ATT Read By Type 0x2A38), and pairs when the gateway asks (an SMP Security Request) or
    /// refuses the read for want of security (Insufficient Authentication or Encryption). Otherwise (`connected`,
    /// an Android phone's and BlueZ's way) it opens with its Pairing Request.
    public var waitsToBeAsked = false

    public init(
        irk: [UInt8], identityType: UInt8 = 0, rotation: Double = 60, pairing: Pairing? = nil,
        waitsToBeAsked: Bool = false
    ) {
        self.waitsToBeAsked = waitsToBeAsked
        precondition(irk.count == 16, "an IRK is 128 bits")
        self.irk = irk
        self.identityType = identityType
        self.rotation = rotation
        self.pairing = pairing
    }

    /// Which address period `t` falls in.
    public func epoch(at t: Double) -> Int64 { Int64((t / rotation).rounded(.down)) }

    /// The resolvable private address of period `epoch` (§1.3.2.2): prand, 22 random bits under the type bits
    /// 0b01, in the top 24 bits; hash = ah(IRK, prand) in the bottom 24.
    public func address(epoch: Int64, identity: BDAddress) -> BDAddress {
        var h = SHA256()
        h.update(data: irk)
        withUnsafeBytes(of: epoch.littleEndian) { h.update(bufferPointer: $0) }
        withUnsafeBytes(of: identity.rawValue.littleEndian) { h.update(bufferPointer: $0) }
        let d = Array(h.finalize())
        var random = UInt32(d[0]) << 16 | UInt32(d[1]) << 8 | UInt32(d[2])
        random &= 0x3F_FFFF
        // §1.3.2.2: "All bits of the random part of prand shall not be equal to 0 … shall not be equal to 1".
        if random == 0 || random == 0x3F_FFFF { random = 0x15_5555 }
        let prand = 0x40_0000 | random
        let hash = SimSecurity.ah(irk: irk, prand: prand)
        return BDAddress(rawValue: UInt64(prand) << 24 | UInt64(hash))
    }
}

/// The phone's side of one pairing (Vol 3, Part H, §2.3.5.6 and §3.6): the initiator of LE Secure Connections,
/// Numeric Comparison or Just Works, then encryption, then its keys. A state machine with no I/O: `receive` takes
/// an SMP PDU from the gateway and says what the phone sends and whether it starts encryption now.
public struct SimPhonePairing: Sendable {
    public enum Outcome: Sendable, Hashable {
        /// The gateway took the identity (its LTK matched ours; our IRK and identity address went out).
        case paired
        /// Pairing Failed, with its reason, from either side.
        case failed(reason: UInt8, byPhone: Bool)
        /// The gateway answered the encryption with a key that is not the pairing's, or with none.
        case encryptionRefused
    }

    public struct Output: Sendable {
        public var smp: [[UInt8]] = []
        /// The phone has checked Eb: its controller asks the gateway's for the LTK (LE Long Term Key Request).
        public var startEncryption = false
    }

    enum State: Sendable {
        /// An iPhone waiting to be asked to pair (`PhoneSpec.waitsToBeAsked`).
        case notAsked
        case awaitingResponse
        case awaitingPublicKey(response: [UInt8])
        case awaitingConfirm(response: [UInt8], dhKey: [UInt8], peerX: [UInt8])
        /// Passkey Entry: waiting for the user to type the passkey the gateway shows.
        case awaitingPasskey(response: [UInt8], dhKey: [UInt8], peerX: [UInt8])
        /// Passkey Entry round `round`: our Cai sent, waiting for Cbi; then our Nai sent, waiting for Nbi.
        case passkeyConfirm(Passkey, nai: [UInt8])
        case passkeyRandom(Passkey, nai: [UInt8], cbi: [UInt8])
        case awaitingRandom(response: [UInt8], dhKey: [UInt8], peerX: [UInt8], cb: [UInt8])
        case awaitingCheck(response: [UInt8], expectedEb: [UInt8], ltk: [UInt8])
        case awaitingEncryption(ltk: [UInt8], response: [UInt8])
        case done(Outcome)
    }

    /// A Passkey Entry under way (§2.3.5.6.3).
    struct Passkey: Sendable {
        var response: [UInt8]
        var dhKey: [UInt8]
        var peerX: [UInt8]
        var passkey: UInt32
        var round: Int
        /// z of f4 this round: 0x80 with the passkey's bit `round`, least significant first.
        var z: UInt8 { 0x80 | UInt8(passkey >> UInt32(round) & 1) }
    }

    // §3.5.1 codes, §3.5.5 reasons (Vol 3, Part H).
    static let pairingRequest: UInt8 = 0x01
    static let pairingResponse: UInt8 = 0x02
    static let pairingConfirm: UInt8 = 0x03
    static let pairingRandom: UInt8 = 0x04
    static let pairingFailed: UInt8 = 0x05
    static let identityInformation: UInt8 = 0x08
    static let identityAddressInformation: UInt8 = 0x09
    static let pairingPublicKey: UInt8 = 0x0C
    static let pairingDHKeyCheck: UInt8 = 0x0D
    static let confirmValueFailed: UInt8 = 0x04
    static let unspecifiedReason: UInt8 = 0x08
    static let dhKeyCheckFailed: UInt8 = 0x0B
    static let numericComparisonFailed: UInt8 = 0x0C

    let spec: PhoneSpec
    let identity: BDAddress
    /// A1 and A2 of f5/f6: type octet then address, for the phone (as it connected) and the gateway.
    let a1: [UInt8]
    let a2: [UInt8]
    /// The private key's scalar (the key type itself is not Sendable).
    let key: [UInt8]
    let x: [UInt8]
    let y: [UInt8]
    let na: [UInt8]
    /// Pairing Request's six parameter octets.
    let request: [UInt8]
    var state = State.awaitingResponse
    /// The six digits the phone showed (Numeric Comparison) or its user typed (Passkey Entry), for a test to compare
    /// with the gateway's.
    public private(set) var digits: UInt32?
    public var outcome: Outcome? {
        if case .done(let o) = state { return o }
        return nil
    }

    init(
        spec: PhoneSpec, identity: BDAddress, phoneAddress: BDAddress, gateway: (type: UInt8, address: BDAddress),
        seed: [UInt8]
    ) {
        self.spec = spec
        self.identity = identity
        a1 = [0x01] + Self.octets(phoneAddress)
        a2 = [gateway.type & 0x01] + Self.octets(gateway.address)
        (key, x, y) = SimSecurity.keyPair(seed: seed)
        na = Array(SHA256.hash(data: seed + [0x4E]).prefix(16))
        // IO Capability 0x01 DisplayYesNo; OOB 0; AuthReq Bonding(0b01) | MITM(0x04) | SC(0x08) (legacy: no SC);
        // 16-octet keys; the phone offers EncKey and IdKey (0x03) unless it withholds its identity (EncKey only),
        // and asks for the same back.
        let sc: UInt8 = spec.pairing == .legacyOnly ? 0x00 : 0x08
        let keys: UInt8 = spec.pairing == .withholdsIdentity ? 0x01 : 0x03
        // IO Capability 0x02 KeyboardOnly for a device that can only type.
        let io: UInt8 = spec.pairing == .keyboardOnly ? 0x02 : 0x01
        request = [io, 0x00, 0x01 | 0x04 | sc, 16, keys, 0x03]
        if spec.waitsToBeAsked { state = .notAsked }
    }

    /// The opening Pairing Request.
    public var opening: [UInt8] { [Self.pairingRequest] + request }

    /// SMP Security Request (Vol 3, Part H, §3.6.7).
    static let securityRequest: UInt8 = 0x0B

    /// What the phone sends first on the link: its Pairing Request (SMP), or, waiting to be asked, an ATT Read By
    /// Type Request for the Body Sensor Location over every handle (Vol 3, Part G, §4.8.2).
    public var openingPDU: (cid: UInt16, pdu: [UInt8]) {
        spec.waitsToBeAsked
            ? (SimCID.att, [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x38, 0x2A]) : (SimCID.smp, opening)
    }

    /// Whether a pairing was asked for, and how (for the tests): nil while it was not, or for a phone that opened
    /// with its Pairing Request.
    public private(set) var askedBy: AskedBy?
    public enum AskedBy: Sendable, Hashable {
        case securityRequest
        case attError(UInt8)
    }

    /// An ATT PDU from the gateway: an Error Response to the phone's read for want of security (0x05 Insufficient
    /// Authentication, 0x0F Insufficient Encryption) makes a waiting phone pair; returns its Pairing Request then.
    public mutating func attReceived(_ pdu: [UInt8]) -> [UInt8]? {
        guard case .notAsked = state, pdu.count == 5, pdu[0] == 0x01, pdu[4] == 0x05 || pdu[4] == 0x0F else {
            return nil
        }
        askedBy = .attError(pdu[4])
        state = .awaitingResponse
        return opening
    }

    /// Most significant octet first, as f5 and f6 take an address.
    static func octets(_ a: BDAddress) -> [UInt8] { a.bytes.reversed() }

    public mutating func receive(_ pdu: [UInt8]) -> Output {
        guard let code = pdu.first else { return Output() }
        let body = Array(pdu.dropFirst())
        if code == Self.securityRequest {
            // §2.4.6 (Vol 3, Part H): a central asked for security starts pairing; one already pairing ignores it.
            guard case .notAsked = state else { return Output() }
            askedBy = .securityRequest
            state = .awaitingResponse
            return Output(smp: [opening])
        }
        if code == Self.pairingFailed {
            state = .done(.failed(reason: body.first ?? 0, byPhone: false))
            return Output()
        }
        switch (state, code) {
        case (.awaitingResponse, Self.pairingResponse) where body.count == 6:
            state = .awaitingPublicKey(response: body)
            // Values go least significant octet first on the air (§3.5.6).
            return Output(smp: [[Self.pairingPublicKey] + x.reversed() + y.reversed()])
        case (.awaitingPublicKey(let response), Self.pairingPublicKey) where body.count == 64:
            let px = Array(body[0..<32].reversed())
            let py = Array(body[32..<64].reversed())
            guard let dh = SimSecurity.dhKey(key, peerX: px, peerY: py) else { return fail(Self.dhKeyCheckFailed) }
            // KeyboardOnly against a gateway with a display: Passkey Entry, and the phone's user types first.
            if request[0] == 0x02 && [0x00, 0x01, 0x04].contains(response[0]) {
                state = .awaitingPasskey(response: response, dhKey: dh, peerX: px)
            } else {
                state = .awaitingConfirm(response: response, dhKey: dh, peerX: px)
            }
            return Output()
        case (.passkeyConfirm(let p, let nai), Self.pairingConfirm) where body.count == 16:
            state = .passkeyRandom(p, nai: nai, cbi: body.reversed())
            return Output(smp: [[Self.pairingRandom] + nai.reversed()])
        case (.passkeyRandom(var p, let nai, let cbi), Self.pairingRandom) where body.count == 16:
            let nbi = Array(body.reversed())
            guard SimSecurity.f4(p.peerX, x, nbi, p.z) == cbi else { return fail(Self.confirmValueFailed) }
            guard p.round == 19 else {
                p.round += 1
                return Output(smp: [passkeyConfirm(p)])
            }
            let r =
                [UInt8](repeating: 0, count: 13) + [
                    UInt8(p.passkey >> 16 & 0xFF), UInt8(p.passkey >> 8 & 0xFF), UInt8(p.passkey & 0xFF),
                ]
            return dhKeyCheck(response: p.response, dhKey: p.dhKey, na: nai, nb: nbi, r: r)
        case (.awaitingConfirm(let response, let dh, let px), Self.pairingConfirm) where body.count == 16:
            state = .awaitingRandom(response: response, dhKey: dh, peerX: px, cb: body.reversed())
            return Output(smp: [[Self.pairingRandom] + na.reversed()])
        case (.awaitingRandom(let response, let dh, let px, let cb), Self.pairingRandom) where body.count == 16:
            let nb = Array(body.reversed())
            guard SimSecurity.f4(px, x, nb, 0) == cb else { return fail(Self.confirmValueFailed) }
            // Both sides DisplayYesNo with MITM: Numeric Comparison, and the phone shows g2's six digits.
            if response[0] == 0x01 || response[0] == 0x04 { digits = SimSecurity.g2(x, px, na, nb) }
            if spec.pairing == .declines { return fail(Self.numericComparisonFailed) }
            return dhKeyCheck(response: response, dhKey: dh, na: na, nb: nb, r: [UInt8](repeating: 0, count: 16))
        case (.awaitingCheck(let response, let eb, let ltk), Self.pairingDHKeyCheck) where body.count == 16:
            guard Array(body.reversed()) == eb else { return fail(Self.dhKeyCheckFailed) }
            state = .awaitingEncryption(ltk: ltk, response: response)
            return Output(startEncryption: true)
        default:
            return fail(Self.unspecifiedReason)
        }
    }

    /// Stage 2 (§2.3.5.6.5): the LTK, and Ea sent; Eb expected back.
    mutating func dhKeyCheck(response: [UInt8], dhKey: [UInt8], na: [UInt8], nb: [UInt8], r: [UInt8]) -> Output {
        let (macKey, ltk) = SimSecurity.f5(dhKey, na, nb, a1, a2)
        let ioA = [request[2], request[1], request[0]]
        let ioB = [response[2], response[1], response[0]]
        let ea = SimSecurity.f6(macKey, na, nb, r, ioA, a1, a2)
        let eb = SimSecurity.f6(macKey, nb, na, r, ioB, a2, a1)
        state = .awaitingCheck(response: response, expectedEb: eb, ltk: ltk)
        return Output(smp: [[Self.pairingDHKeyCheck] + ea.reversed()])
    }

    /// Passkey Entry: round `p.round`'s Nai and Cai = f4(PKax, PKbx, Nai, z); Nai from the phone's seed and the round.
    mutating func passkeyConfirm(_ p: Passkey) -> [UInt8] {
        let nai = Array(SHA256.hash(data: na + [UInt8(p.round)]).prefix(16))
        state = .passkeyConfirm(p, nai: nai)
        return [Self.pairingConfirm] + SimSecurity.f4(x, p.peerX, nai, p.z).reversed()
    }

    /// The user typed `passkey` (what the gateway displays, or a mistake): the first round's Confirm. Nil unless the
    /// phone is waiting for it.
    public mutating func typed(_ passkey: UInt32) -> [UInt8]? {
        guard case .awaitingPasskey(let response, let dh, let px) = state else { return nil }
        digits = passkey
        return passkeyConfirm(Passkey(response: response, dhKey: dh, peerX: px, passkey: passkey, round: 0))
    }

    /// The gateway's controller answered LE Long Term Key Request with `key` (nil: the Negative Reply). On a
    /// match the link is encrypted and the phone distributes the keys the gateway asked for (§3.6.1: the
    /// responder's first, of which the gateway asks none).
    public mutating func encryption(withKey key: [UInt8]?) -> (encrypted: Bool, smp: [[UInt8]]) {
        guard case .awaitingEncryption(let ltk, let response) = state else { return (false, []) }
        guard key == ltk else {
            state = .done(.encryptionRefused)
            return (false, [])
        }
        state = .done(.paired)
        var out: [[UInt8]] = []
        if response[4] & 0x02 != 0 {
            out.append([Self.identityInformation] + spec.irk.reversed())
            out.append([Self.identityAddressInformation, spec.identityType] + identity.bytes)
        }
        return (true, out)
    }

    mutating func fail(_ reason: UInt8) -> Output {
        state = .done(.failed(reason: reason, byPhone: true))
        return Output(smp: [[Self.pairingFailed, reason]])
    }
}
