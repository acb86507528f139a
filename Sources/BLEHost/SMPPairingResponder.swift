import BLEHCI
import BLETransport

/// LE Secure Connections pairing on the responder's side (Core v5.4, Vol 3, Part H, §2.3.5.6, §3.5, §3.6): the
/// gateway is the peripheral a phone pairs with once, to hand over its Identity Resolving Key. Just Works, Numeric
/// Comparison and Passkey Entry with the gateway displaying; legacy pairing is refused. A state machine with no I/O: SMP commands and the controller's
/// encryption events in, SMP commands to send and what to show or store out; keys and nonces are given to it
/// (the caller owns the random source), and time is passed in.
///
/// The exchange, as the responder sees it (§2.3.5.6.2, §2.3.5.6.5, §3.6.1):
/// Pairing Request → Pairing Response; Public Key A → Public Key B, Confirm Cb = f4(PKbx, PKax, Nb, 0);
/// Random Na → Random Nb (Numeric Comparison: g2(PKax, PKbx, Na, Nb) shown, the operator confirms);
/// DHKey Check Ea → Eb (after the confirmation); the phone encrypts with the LTK of f5; then it distributes
/// Identity Information (the IRK) and Identity Address Information. Passkey Entry (§2.3.5.6.3) replaces the one
/// Confirm/Random exchange with twenty, one per bit of the passkey we display (least significant first): Confirm Cai
/// → Confirm Cbi = f4(PKbx, PKax, Nbi, 0x80|bit); Random Nai (Cai checked) → Random Nbi; then ra = rb = the passkey
/// in f6, and Na, Nb are the twentieth round's.
public struct SMPPairingResponder: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// DisplayYesNo: the CLI shows six digits and asks; a phone that can compare gets Numeric Comparison.
        public var ioCapability = SMPIOCapability.displayYesNo
        /// §3.4: "If the timer reaches 30 seconds, the procedure shall be considered to have failed".
        public var timeout = Duration.seconds(30)
        public init() {}
    }

    /// A device's address as f5 and f6 take it (§2.2.7): the address type, then the 48-bit address.
    public struct Party: Sendable, Hashable {
        public var type: LEAddressType
        public var address: BDAddress
        public init(type: LEAddressType, address: BDAddress) {
            self.type = type
            self.address = address
        }

        /// 56 bits, most significant octet first: "A1 is the 56-bit address of the device … the type … in the most
        /// significant octet" (0x00 public, 0x01 random).
        var octets: [UInt8] { [type.rawValue & 0x01] + address.bytes.reversed() }
    }

    /// What the phone handed over: who it is under every address it will rotate through.
    public struct PeerIdentity: Sendable, Hashable {
        /// Most significant octet first, as `IdentityResolvingKey` takes it.
        public var irk: [UInt8]
        public var addressType: LEAddressType
        public var address: BDAddress
        public init(irk: [UInt8], addressType: LEAddressType, address: BDAddress) {
            self.irk = irk
            self.addressType = addressType
            self.address = address
        }
    }

    public enum Method: Sendable, Hashable {
        case justWorks
        case numericComparison
        /// The phone's user types the passkey we display.
        case passkeyEntry
    }

    public enum Failure: Sendable, Hashable, CustomStringConvertible {
        /// We sent Pairing Failed with this reason.
        case refused(SMPFailureReason)
        /// The phone sent Pairing Failed.
        case peerFailed(SMPFailureReason)
        /// §3.4: 30 s without a command; no further SMP command is sent.
        case timeout
        /// The link was encrypted but no identity came: the phone did not agree to distribute its IdKey.
        case noIdentity

        public var description: String {
            switch self {
            case .refused(let r): "refused: \(r)"
            case .peerFailed(let r): "the phone ended it: \(r)"
            case .timeout: "no answer within 30 s (SMP timeout)"
            case .noIdentity: "paired, but the phone distributed no identity key"
            }
        }
    }

    public enum Event: Sendable {
        /// An SMP command's octets from the phone.
        case received([UInt8])
        /// Numeric Comparison: the operator says the six digits match (or not).
        case userConfirmed(Bool)
        /// HCI LE Long Term Key Request (Vol 4, Part E, §7.7.65.5): the phone starts encryption.
        case longTermKeyRequested
        /// HCI Encryption Change (§7.7.8): on or off.
        case encryptionChanged(on: Bool)
        case tick
    }

    public enum Action: Sendable, Hashable {
        /// An SMP command to send on CID 0x0006.
        case send([UInt8])
        /// Show the six digits and ask the operator whether the phone shows the same.
        case compare(UInt32)
        /// Show the passkey (000000–999999) for the phone's user to type.
        case display(UInt32)
        /// HCI LE Long Term Key Request Reply with this key (most significant octet first).
        case replyLongTermKey([UInt8])
        /// HCI LE Long Term Key Request Negative Reply: no pairing has made a key.
        case refuseLongTermKey
        case paired(PeerIdentity)
        case failed(Failure)
    }

    /// What both sides agreed in the feature exchange.
    struct Agreement: Sendable {
        var request: SMPPairingFeatures
        var response: SMPPairingFeatures
        var method: Method
    }

    /// The key exchange, once both public keys are known.
    struct Keys: Sendable {
        var peerX: [UInt8]
        var dhKey: [UInt8]
        /// Nb as f5 and f6 take it: ours, or the twentieth round's with Passkey Entry.
        var nb: [UInt8]
        /// r of f6: zero, or the passkey as a 128-bit value with Passkey Entry.
        var r: [UInt8]
    }

    enum State: Sendable {
        case awaitingRequest
        case awaitingPublicKey(Agreement)
        case awaitingRandom(Agreement, Keys)
        /// Passkey Entry, round 0…19: waiting for the phone's Cai.
        case awaitingPasskeyConfirm(Agreement, Keys, round: Int)
        /// Our Cbi sent; waiting for Nai, which must open Cai.
        case awaitingPasskeyRandom(Agreement, Keys, round: Int, cai: [UInt8])
        /// Nb sent. Numeric Comparison: waiting for the operator and for Ea, in either order.
        case awaitingCheck(Agreement, Keys, na: [UInt8], confirmed: Bool, ea: [UInt8]?)
        /// Eb sent; the phone encrypts with `ltk`.
        case awaitingEncryption(Agreement, ltk: [UInt8])
        /// Encrypted: the phone distributes its keys; `irk` once Identity Information came.
        case awaitingIdentity(Agreement, irk: [UInt8]?)
        case paired
        case failed(Failure)
    }

    public let configuration: Configuration
    let initiator: Party
    let responder: Party
    let privateKey: [UInt8]
    let publicX: [UInt8]
    let publicY: [UInt8]
    let nonce: [UInt8]
    /// Passkey Entry: the passkey we display and the twenty nonces Nb1…Nb20 (empty: Passkey Entry is refused).
    let passkey: UInt32
    let passkeyNonces: [[UInt8]]
    private(set) var state = State.awaitingRequest
    /// §3.4: restarted whenever a command is queued for transmission.
    private var deadline: Duration

    /// - Parameters: the phone's and our addresses as the link uses them; our P-256 key pair for this pairing
    ///   (most significant octet first; a fresh one per pairing, §2.3.6); Nb, 128 random bits; `now`, the link's
    ///   start (the timer runs from it).
    public init(
        configuration: Configuration = Configuration(), initiator: Party, responder: Party,
        privateKey: [UInt8], publicKey: (x: [UInt8], y: [UInt8]), nonce: [UInt8], passkey: UInt32 = 0,
        passkeyNonces: [[UInt8]] = [], now: Duration
    ) {
        precondition(passkey < 1_000_000 && (passkeyNonces.isEmpty || passkeyNonces.count == Self.passkeyRounds))
        precondition(privateKey.count == 32 && publicKey.x.count == 32 && publicKey.y.count == 32 && nonce.count == 16)
        self.configuration = configuration
        self.initiator = initiator
        self.responder = responder
        self.privateKey = privateKey
        self.publicX = publicKey.x
        self.publicY = publicKey.y
        self.nonce = nonce
        self.passkey = passkey
        self.passkeyNonces = passkeyNonces
        self.deadline = now + configuration.timeout
    }

    public var isFinished: Bool {
        switch state {
        case .paired, .failed: true
        default: false
        }
    }

    public mutating func handle(_ event: Event, now: Duration) -> [Action] {
        if isFinished {
            // After a pairing, the phone may still encrypt again with the LTK it keeps; this pairing has no more to
            // say.
            if case .longTermKeyRequested = event { return [.refuseLongTermKey] }
            return []
        }
        if now >= deadline {
            state = .failed(.timeout)
            return [.failed(.timeout)]
        }
        var out: [Action]
        switch event {
        case .received(let bytes): out = received(bytes)
        case .userConfirmed(let yes): out = userConfirmed(yes)
        case .longTermKeyRequested: out = longTermKeyRequested()
        case .encryptionChanged(let on): out = encryptionChanged(on: on)
        case .tick: out = []
        }
        if out.contains(where: { if case .send = $0 { true } else { false } }) {
            deadline = now + configuration.timeout
        }
        return out
    }

    /// When `tick` should come next: the SMP timer.
    public var nextDeadline: Duration? { isFinished ? nil : deadline }

    // MARK: Events

    mutating func received(_ bytes: [UInt8]) -> [Action] {
        let pdu: SMPPDU
        switch SMPPDU.parse(bytes[...]) {
        case .success(let p): pdu = p
        case .failure(let error): return fail(error.reason)
        }
        if case .pairingFailed(let reason) = pdu {
            state = .failed(.peerFailed(reason))
            return [.failed(.peerFailed(reason))]
        }
        switch (state, pdu) {
        case (.awaitingRequest, .pairingRequest(let request)): return pairingRequest(request)
        case (.awaitingPublicKey(let agreement), .pairingPublicKey(let x, let y)):
            return publicKey(agreement, x: x, y: y)
        case (.awaitingRandom(let agreement, let keys), .pairingRandom(let na)):
            state = .awaitingCheck(agreement, keys, na: na, confirmed: agreement.method == .justWorks, ea: nil)
            var out: [Action] = [.send(SMPPDU.pairingRandom(nonce).bytes)]
            if agreement.method == .numericComparison {
                let v = SecurityFunctions.g2(u: keys.peerX, v: publicX, x: na, y: nonce)
                out.append(.compare(v % 1_000_000))
            }
            return out
        case (.awaitingPasskeyConfirm(let agreement, let keys, let round), .pairingConfirm(let cai)):
            let cbi = SecurityFunctions.f4(
                u: publicX, v: keys.peerX, x: passkeyNonces[round], z: passkeyBit(round))
            state = .awaitingPasskeyRandom(agreement, keys, round: round, cai: cai)
            return [.send(SMPPDU.pairingConfirm(cbi).bytes)]
        case (.awaitingPasskeyRandom(let agreement, var keys, let round, let cai), .pairingRandom(let nai)):
            // A phone that typed another passkey fails here, at the first bit that differs.
            guard SecurityFunctions.f4(u: keys.peerX, v: publicX, x: nai, z: passkeyBit(round)) == cai else {
                return fail(.confirmValueFailed)
            }
            let out: [Action] = [.send(SMPPDU.pairingRandom(passkeyNonces[round]).bytes)]
            if round + 1 < Self.passkeyRounds {
                state = .awaitingPasskeyConfirm(agreement, keys, round: round + 1)
            } else {
                keys.nb = passkeyNonces[round]
                keys.r =
                    [UInt8](repeating: 0, count: 13) + [
                        UInt8(passkey >> 16 & 0xFF), UInt8(passkey >> 8 & 0xFF), UInt8(passkey & 0xFF),
                    ]
                state = .awaitingCheck(agreement, keys, na: nai, confirmed: true, ea: nil)
            }
            return out
        case (.awaitingCheck(let agreement, let keys, let na, let confirmed, nil), .pairingDHKeyCheck(let ea)):
            state = .awaitingCheck(agreement, keys, na: na, confirmed: confirmed, ea: ea)
            return confirmed ? check() : []
        case (.awaitingIdentity(let agreement, nil), .identityInformation(let irk)):
            state = .awaitingIdentity(agreement, irk: irk)
            return []
        case (.awaitingIdentity(_, let irk?), .identityAddressInformation(let type, let address)):
            // §3.6.4: the identity address is public or random static; a random one must be static (top bits 11).
            guard type == .public || (type == .random && address.rawValue >> 46 == 0b11) else {
                return fail(.invalidParameters)
            }
            state = .paired
            return [.paired(PeerIdentity(irk: irk, addressType: type, address: address))]
        case (.awaitingIdentity, .signingInformation), (.awaitingIdentity, .encryptionInformation),
            (.awaitingIdentity, .centralIdentification):
            // Keys the phone may send although enrolment asked only for its identity: not kept.
            return []
        default:
            return fail(.unspecifiedReason)
        }
    }

    mutating func userConfirmed(_ yes: Bool) -> [Action] {
        guard case .awaitingCheck(let agreement, let keys, let na, false, let ea) = state,
            agreement.method == .numericComparison
        else { return [] }
        guard yes else { return fail(.numericComparisonFailed) }
        state = .awaitingCheck(agreement, keys, na: na, confirmed: true, ea: ea)
        return ea == nil ? [] : check()
    }

    mutating func longTermKeyRequested() -> [Action] {
        guard case .awaitingEncryption(_, let ltk) = state else { return [.refuseLongTermKey] }
        return [.replyLongTermKey(ltk)]
    }

    mutating func encryptionChanged(on: Bool) -> [Action] {
        guard case .awaitingEncryption(let agreement, _) = state else { return [] }
        guard on else { return fail(.unspecifiedReason) }
        // §3.6.1: the responder distributes first; enrolment asks it for nothing, so the phone goes on at once.
        guard agreement.response.initiatorKeys.contains(.idKey) else {
            state = .failed(.noIdentity)
            return [.failed(.noIdentity)]
        }
        state = .awaitingIdentity(agreement, irk: nil)
        return []
    }

    // MARK: Steps

    mutating func pairingRequest(_ request: SMPPairingFeatures) -> [Action] {
        // Legacy pairing gives no protection against a passive eavesdropper: refused with its reason.
        guard request.authRequirements.contains(.secureConnections) else { return fail(.authenticationRequirements) }
        // §3.5.1: Maximum Encryption Key Size is 7…16. The key is used at its full 16 octets, never shortened to a
        // smaller size a phone offers (§2.3.4 would mask it): anything below 16 is refused with the reason that says
        // so (§3.5.5, 0x06 Encryption Key Size), instead of agreeing to a size and then not using it.
        guard request.maxEncryptionKeySize <= 16 else { return fail(.invalidParameters) }
        guard request.maxEncryptionKeySize == 16 else { return fail(.encryptionKeySize) }
        // Out-of-band data from us the phone cannot have: this gateway never gives any.
        guard !request.oobDataPresent else { return fail(.oobNotAvailable) }
        guard let method = Self.method(request: request, ours: configuration.ioCapability),
            method != .passkeyEntry || passkeyNonces.count == Self.passkeyRounds
        else {
            // Passkey Entry where we would type, or without the nonces to display one, is not offered.
            return fail(.authenticationRequirements)
        }
        var auth: SMPAuthRequirements = .bonding | .secureConnections
        if configuration.ioCapability != .noInputNoOutput { auth = auth | .mitm }
        let response = SMPPairingFeatures(
            ioCapability: configuration.ioCapability, authRequirements: auth, maxEncryptionKeySize: 16,
            initiatorKeys: request.initiatorKeys & .idKey, responderKeys: .none)
        state = .awaitingPublicKey(Agreement(request: request, response: response, method: method))
        return [.send(SMPPDU.pairingResponse(response).bytes)]
    }

    mutating func publicKey(_ agreement: Agreement, x: [UInt8], y: [UInt8]) -> [Action] {
        // A key off the curve (an invalid-curve attack) or our own key sent back gives no shared secret.
        guard x != publicX, let dhKey = SecurityFunctions.dhKey(privateKey: privateKey, peerX: x, peerY: y) else {
            return fail(.dhKeyCheckFailed)
        }
        let keys = Keys(peerX: x, dhKey: dhKey, nb: nonce, r: [UInt8](repeating: 0, count: 16))
        let ours = SMPPDU.pairingPublicKey(x: publicX, y: publicY).bytes
        if agreement.method == .passkeyEntry {
            // §2.3.5.6.3: the phone confirms first in every round; its user needs the passkey now.
            state = .awaitingPasskeyConfirm(agreement, keys, round: 0)
            return [.send(ours), .display(passkey)]
        }
        state = .awaitingRandom(agreement, keys)
        let cb = SecurityFunctions.f4(u: publicX, v: x, x: nonce, z: 0)
        return [.send(ours), .send(SMPPDU.pairingConfirm(cb).bytes)]
    }

    /// Passkey Entry's rounds, one per bit of a passkey below 2^20 (§2.3.5.6.3: "k = 20").
    static let passkeyRounds = 20

    /// z of f4 in round `round`: 0x80 with the passkey's bit `round` (least significant first) in bit 0.
    func passkeyBit(_ round: Int) -> UInt8 { 0x80 | UInt8(passkey >> UInt32(round) & 1) }

    /// Stage 2 (§2.3.5.6.5): Ea checked, Eb sent; r is zero for Just Works and Numeric Comparison, the passkey for
    /// Passkey Entry.
    mutating func check() -> [Action] {
        guard case .awaitingCheck(let agreement, let keys, let na, true, let ea?) = state else { return [] }
        let a = initiator.octets
        let b = responder.octets
        let (macKey, ltk) = SecurityFunctions.f5(w: keys.dhKey, n1: na, n2: keys.nb, a1: a, a2: b)
        let expected = SecurityFunctions.f6(
            w: macKey, n1: na, n2: keys.nb, r: keys.r, ioCap: agreement.request.ioCap, a1: a, a2: b)
        guard expected == ea else { return fail(.dhKeyCheckFailed) }
        let eb = SecurityFunctions.f6(
            w: macKey, n1: keys.nb, n2: na, r: keys.r, ioCap: agreement.response.ioCap, a1: b, a2: a)
        state = .awaitingEncryption(agreement, ltk: ltk)
        return [.send(SMPPDU.pairingDHKeyCheck(eb).bytes)]
    }

    mutating func fail(_ reason: SMPFailureReason) -> [Action] {
        state = .failed(.refused(reason))
        return [.send(SMPPDU.pairingFailed(reason).bytes), .failed(.refused(reason))]
    }

    /// §2.3.5.1: Just Works unless either side asks for MITM protection; then Table 2.8 for LE Secure Connections,
    /// the responder's capability against the initiator's. Nil where the table has the responder type a passkey (this
    /// responder only displays).
    static func method(request: SMPPairingFeatures, ours: SMPIOCapability) -> Method? {
        let mitm = request.authRequirements.contains(.mitm) || ours != .noInputNoOutput
        guard mitm else { return .justWorks }
        switch (ours, request.ioCapability) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput): return .justWorks
        case (.displayYesNo, .displayOnly), (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo):
            return .justWorks
        case (.displayYesNo, .displayYesNo), (.displayYesNo, .keyboardDisplay), (.keyboardDisplay, .displayYesNo),
            (.keyboardDisplay, .keyboardDisplay):
            return .numericComparison
        // The initiator types what the responder displays.
        case (.displayYesNo, .keyboardOnly), (.displayOnly, .keyboardOnly), (.displayOnly, .keyboardDisplay),
            (.keyboardDisplay, .keyboardOnly):
            return .passkeyEntry
        default: return nil
        }
    }
}
