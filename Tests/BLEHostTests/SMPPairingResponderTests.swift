import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// LE Secure Connections pairing as the gateway answers a phone, in literal SMP bytes. The phone's side is
/// computed here from the security functions (checked against the specification's sample data in
/// SecurityFunctionsTests), with the specification's sample key pairs and nonces: the phone is device A, the
/// gateway device B.
@Suite struct SMPPairingResponderTests {
    typealias S = SecurityFunctionsTests
    static let phone = SMPPairingResponder.Party(type: .random, address: BDAddress("5A:11:22:33:44:55")!)
    static let gateway = SMPPairingResponder.Party(type: .public, address: BDAddress("00:1B:DC:10:00:99")!)
    /// An iPhone's request: KeyboardDisplay, no OOB, Bonding | MITM | SC | CT2, 16 octets, every key both ways.
    static let iPhoneRequest: [UInt8] = [0x01, 0x04, 0x00, 0x2D, 0x10, 0x0F, 0x0F]
    static let irk = S.h("ec0234a3 57c8ad05 341010a6 0a397d9b")

    var r = SMPPairingResponder(
        initiator: phone, responder: gateway, privateKey: S.privateB, publicKey: (S.publicBX, S.publicBY),
        nonce: S.n2, now: .zero)
    var t = Duration.zero

    mutating func on(_ e: SMPPairingResponder.Event, after d: Duration = .seconds(1)) -> [SMPPairingResponder.Action] {
        t += d
        return r.handle(e, now: t)
    }

    static func sent(_ actions: [SMPPairingResponder.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(let b) = $0 { b } else { nil } }
    }

    /// The phone's public key as SMP carries it: code 0x0C, then X and Y least significant octet first.
    static let phonePublicKey: [UInt8] = [0x0C] + S.publicAX.reversed() + S.publicAY.reversed()

    /// The phone's DHKey check and the gateway's expected one, from the sample DHKey and nonces.
    static func checks(phoneIOCap: [UInt8], gatewayIOCap: [UInt8]) -> (ea: [UInt8], eb: [UInt8], ltk: [UInt8]) {
        let (a, b) = (phone.octets, gateway.octets)
        let (macKey, ltk) = SecurityFunctions.f5(w: S.dhKey, n1: S.n1, n2: S.n2, a1: a, a2: b)
        let zero = [UInt8](repeating: 0, count: 16)
        let ea = SecurityFunctions.f6(w: macKey, n1: S.n1, n2: S.n2, r: zero, ioCap: phoneIOCap, a1: a, a2: b)
        let eb = SecurityFunctions.f6(w: macKey, n1: S.n2, n2: S.n1, r: zero, ioCap: gatewayIOCap, a1: b, a2: a)
        return (ea, eb, ltk)
    }

    @Test mutating func anIPhonesRequestIsAnsweredAskingOnlyForItsIdentity() {
        // DisplayYesNo, no OOB, Bonding | MITM | SC, 16, the phone's IdKey only, nothing from the gateway.
        #expect(Self.sent(on(.received(Self.iPhoneRequest))) == [[0x02, 0x01, 0x00, 0x0D, 0x10, 0x02, 0x00]])
    }

    @Test mutating func numericComparisonEndsWithThePhonesIdentity() {
        _ = on(.received(Self.iPhoneRequest))
        // Public key B, then Cb = f4(PKbx, PKax, Nb, 0), which the phone checks once it has Nb.
        let keys = on(.received(Self.phonePublicKey))
        let cb = SecurityFunctions.f4(u: S.publicBX, v: S.publicAX, x: S.n2, z: 0)
        #expect(
            Self.sent(keys) == [[0x0C] + S.publicBX.reversed() + S.publicBY.reversed(), [0x03] + cb.reversed()])
        // Na → Nb, and the six digits both sides show: g2(PKax, PKbx, Na, Nb) mod 10^6.
        let random = on(.received([0x04] + S.n1.reversed()))
        #expect(Self.sent(random) == [[0x04] + S.n2.reversed()])
        let shown = SecurityFunctions.g2(u: S.publicAX, v: S.publicBX, x: S.n1, y: S.n2) % 1_000_000
        #expect(random.contains(.compare(shown)))
        // IOcap is AuthReq, OOB, IO capability: the phone's 2D 00 04, the gateway's 0D 00 01.
        let (ea, eb, ltk) = Self.checks(phoneIOCap: [0x2D, 0x00, 0x04], gatewayIOCap: [0x0D, 0x00, 0x01])
        #expect(on(.received([0x0D] + ea.reversed())).isEmpty, "Eb waits for the operator")
        #expect(Self.sent(on(.userConfirmed(true))) == [[0x0D] + eb.reversed()])
        // The phone encrypts with the LTK of f5, then hands over its IRK and identity address.
        #expect(on(.longTermKeyRequested) == [.replyLongTermKey(ltk)])
        #expect(on(.encryptionChanged(on: true)).isEmpty)
        #expect(on(.received([0x08] + Self.irk.reversed())).isEmpty)
        let identity = on(.received([0x09, 0x00, 0x99, 0x00, 0x10, 0xDC, 0x1B, 0x00]))
        #expect(
            identity == [
                .paired(.init(irk: Self.irk, addressType: .public, address: BDAddress("00:1B:DC:10:00:99")!))
            ])
        #expect(r.isFinished && r.nextDeadline == nil)
    }

    @Test mutating func justWorksWhenThePhoneCanNeitherShowNorTake() {
        // NoInputNoOutput, Bonding | SC, keys: IdKey.
        _ = on(.received([0x01, 0x03, 0x00, 0x09, 0x10, 0x02, 0x00]))
        _ = on(.received(Self.phonePublicKey))
        let random = on(.received([0x04] + S.n1.reversed()))
        #expect(!random.contains { if case .compare = $0 { true } else { false } }, "nothing to compare")
        let (ea, eb, _) = Self.checks(phoneIOCap: [0x09, 0x00, 0x03], gatewayIOCap: [0x0D, 0x00, 0x01])
        #expect(Self.sent(on(.received([0x0D] + ea.reversed()))) == [[0x0D] + eb.reversed()])
    }

    @Test mutating func legacyPairingIsRefusedWithItsReason() {
        // DisplayYesNo, Bonding | MITM without SC.
        let refused = on(.received([0x01, 0x01, 0x00, 0x05, 0x10, 0x07, 0x07]))
        #expect(refused == [.send([0x05, 0x03]), .failed(.refused(.authenticationRequirements))])
        #expect(SMPFailureReason.authenticationRequirements.description == "SMP 0x03 Authentication Requirements")
    }

    /// A phone offering a key shorter than 16 octets (7…15, or an invalid 6) is refused with 0x06 Encryption Key Size:
    /// the gateway would otherwise agree to the size and then encrypt with all 16 octets. 17 is outside the range.
    @Test(arguments: [(6, 0x06), (7, 0x06), (15, 0x06), (17, 0x0A)] as [(UInt8, UInt8)])
    func aKeySizeBelowSixteenIsRefusedWithItsReason(_ size: UInt8, _ reason: UInt8) {
        var r = SMPPairingResponder(
            initiator: Self.phone, responder: Self.gateway, privateKey: S.privateB, publicKey: (S.publicBX, S.publicBY),
            nonce: S.n2, now: .zero)
        let refused = r.handle(.received([0x01, 0x04, 0x00, 0x2D, size, 0x0F, 0x0F]), now: .seconds(1))
        #expect(refused == [.send([0x05, reason]), .failed(.refused(SMPFailureReason(rawValue: reason)))])
    }

    /// A keyboard-only device (IO capability 0x02) against our display: Passkey Entry, twenty rounds, each committing
    /// to one bit of the passkey, least significant first (§2.3.5.6.3); the phone's side computed here.
    @Test func aKeyboardOnlyDeviceTypesThePasskeyWeDisplayInTwentyRounds() {
        let nonces = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 16) }
        let passkey: UInt32 = 0x2B67  // 011111 on the display
        var r = SMPPairingResponder(
            initiator: Self.phone, responder: Self.gateway, privateKey: S.privateB, publicKey: (S.publicBX, S.publicBY),
            nonce: S.n2, passkey: passkey, passkeyNonces: nonces, now: .zero)
        let request: [UInt8] = [0x01, 0x02, 0x00, 0x0D, 0x10, 0x02, 0x00]
        _ = r.handle(.received(request), now: .seconds(1))
        let keys = r.handle(.received(Self.phonePublicKey), now: .seconds(1))
        #expect(keys == [.send([0x0C] + S.publicBX.reversed() + S.publicBY.reversed()), .display(passkey)])
        var na: [UInt8] = []
        for round in 0..<20 {
            let z: UInt8 = 0x80 | UInt8(passkey >> UInt32(round) & 1)
            na = [UInt8](repeating: 0xA0 | UInt8(round), count: 16)
            let cai = SecurityFunctions.f4(u: S.publicAX, v: S.publicBX, x: na, z: z)
            let cbi = SecurityFunctions.f4(u: S.publicBX, v: S.publicAX, x: nonces[round], z: z)
            #expect(
                Self.sent(r.handle(.received([0x03] + cai.reversed()), now: .seconds(2))) == [[0x03] + cbi.reversed()])
            #expect(
                Self.sent(r.handle(.received([0x04] + na.reversed()), now: .seconds(2))) == [
                    [0x04] + nonces[round].reversed()
                ])
        }
        // ra = rb = the passkey; Na and Nb are the twentieth round's.
        let (a, b) = (Self.phone.octets, Self.gateway.octets)
        let (macKey, _) = SecurityFunctions.f5(w: S.dhKey, n1: na, n2: nonces[19], a1: a, a2: b)
        let rr = [UInt8](repeating: 0, count: 13) + [0x00, 0x2B, 0x67]
        let ea = SecurityFunctions.f6(
            w: macKey, n1: na, n2: nonces[19], r: rr, ioCap: [0x0D, 0x00, 0x02], a1: a, a2: b)
        let eb = SecurityFunctions.f6(
            w: macKey, n1: nonces[19], n2: na, r: rr, ioCap: [0x0D, 0x00, 0x01], a1: b, a2: a)
        #expect(Self.sent(r.handle(.received([0x0D] + ea.reversed()), now: .seconds(3))) == [[0x0D] + eb.reversed()])
    }

    @Test func aWrongBitFailsItsRoundAndAResponderWithoutNoncesRefusesPasskeyEntry() {
        let nonces = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 16) }
        var r = SMPPairingResponder(
            initiator: Self.phone, responder: Self.gateway, privateKey: S.privateB, publicKey: (S.publicBX, S.publicBY),
            nonce: S.n2, passkey: 1, passkeyNonces: nonces, now: .zero)
        let request: [UInt8] = [0x01, 0x02, 0x00, 0x0D, 0x10, 0x02, 0x00]
        _ = r.handle(.received(request), now: .seconds(1))
        _ = r.handle(.received(Self.phonePublicKey), now: .seconds(1))
        // The phone committed to bit 0 = 0 (z 0x80); the passkey's bit 0 is 1.
        let na = [UInt8](repeating: 0xA0, count: 16)
        let cai = SecurityFunctions.f4(u: S.publicAX, v: S.publicBX, x: na, z: 0x80)
        _ = r.handle(.received([0x03] + cai.reversed()), now: .seconds(2))
        #expect(
            r.handle(.received([0x04] + na.reversed()), now: .seconds(2)) == [
                .send([0x05, 0x04]), .failed(.refused(.confirmValueFailed)),
            ])
        var plain = SMPPairingResponder(
            initiator: Self.phone, responder: Self.gateway, privateKey: S.privateB, publicKey: (S.publicBX, S.publicBY),
            nonce: S.n2, now: .zero)
        #expect(
            plain.handle(.received(request), now: .seconds(1)) == [
                .send([0x05, 0x03]), .failed(.refused(.authenticationRequirements)),
            ])
    }

    @Test mutating func theOperatorSayingNoFailsTheNumericComparison() {
        _ = on(.received(Self.iPhoneRequest))
        _ = on(.received(Self.phonePublicKey))
        _ = on(.received([0x04] + S.n1.reversed()))
        #expect(on(.userConfirmed(false)) == [.send([0x05, 0x0C]), .failed(.refused(.numericComparisonFailed))])
        #expect(on(.longTermKeyRequested) == [.refuseLongTermKey], "no key from a failed pairing")
    }

    @Test mutating func aWrongDHKeyCheckFailsWithItsReason() {
        _ = on(.received(Self.iPhoneRequest))
        _ = on(.received(Self.phonePublicKey))
        _ = on(.received([0x04] + S.n1.reversed()))
        _ = on(.userConfirmed(true))
        var (ea, _, _) = Self.checks(phoneIOCap: [0x2D, 0x00, 0x04], gatewayIOCap: [0x0D, 0x00, 0x01])
        ea[0] ^= 0x01
        #expect(Self.sent(on(.received([0x0D] + ea.reversed()))) == [[0x05, 0x0B]])
    }

    @Test mutating func aPublicKeyOffTheCurveOrOurOwnGivesNoPairing() {
        _ = on(.received(Self.iPhoneRequest))
        var bad = Self.phonePublicKey
        bad[40] ^= 0x01
        #expect(Self.sent(on(.received(bad))) == [[0x05, 0x0B]])
        var mirror = Self.init()
        _ = mirror.on(.received(Self.iPhoneRequest))
        let reflected: [UInt8] = [0x0C] + S.publicBX.reversed() + S.publicBY.reversed()
        #expect(Self.sent(mirror.on(.received(reflected))) == [[0x05, 0x0B]])
    }

    @Test mutating func aPairingAbandonedHalfwayEndsWithThePhonesReasonAndLeavesNoKey() {
        _ = on(.received(Self.iPhoneRequest))
        _ = on(.received(Self.phonePublicKey))
        #expect(on(.received([0x05, 0x08])) == [.failed(.peerFailed(.unspecifiedReason))])
        #expect(on(.received([0x04] + S.n1.reversed())).isEmpty, "nothing more is said")
        #expect(on(.longTermKeyRequested) == [.refuseLongTermKey])
    }

    @Test mutating func thirtySecondsWithoutACommandEndThePairingSilently() {
        _ = on(.received(Self.iPhoneRequest), after: .zero)
        #expect(r.nextDeadline == .seconds(30), "restarted when the response was queued")
        #expect(on(.tick, after: .seconds(29)).isEmpty)
        #expect(on(.tick, after: .seconds(1)) == [.failed(.timeout)], "§3.4: no Pairing Failed is sent")
        #expect(on(.received(Self.phonePublicKey)).isEmpty)
    }

    @Test mutating func commandsOutOfOrderShortOrUnknownAreRefusedWithTheirReasons() {
        #expect(Self.sent(on(.received([0x04] + S.n1.reversed()))) == [[0x05, 0x08]], "a random before any request")
        var short = Self.init()
        #expect(Self.sent(short.on(.received([0x01, 0x04, 0x00]))) == [[0x05, 0x0A]])
        var unknown = Self.init()
        #expect(Self.sent(unknown.on(.received([0x2F]))) == [[0x05, 0x07]])
        var tiny = Self.init()
        #expect(Self.sent(tiny.on(.received([0x01, 0x04, 0x00, 0x2D, 0x06, 0x0F, 0x0F]))) == [[0x05, 0x06]])
    }

    @Test mutating func aPhoneThatWithholdsItsIdentityIsToldApart() {
        // Bonding | MITM | SC, keys: EncKey only from the phone.
        _ = on(.received([0x01, 0x04, 0x00, 0x0D, 0x10, 0x01, 0x01]))
        _ = on(.received(Self.phonePublicKey))
        _ = on(.received([0x04] + S.n1.reversed()))
        _ = on(.userConfirmed(true))
        let (ea, _, _) = Self.checks(phoneIOCap: [0x0D, 0x00, 0x04], gatewayIOCap: [0x0D, 0x00, 0x01])
        _ = on(.received([0x0D] + ea.reversed()))
        _ = on(.longTermKeyRequested)
        #expect(on(.encryptionChanged(on: true)) == [.failed(.noIdentity)])
    }

    /// §3.6.3 Central Identification: EDIV (2) and Rand (8), each least significant octet first.
    @Test func centralIdentificationRoundTrips() {
        let bytes: [UInt8] = [0x07, 0x34, 0x12, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        guard case .success(let pdu) = SMPPDU.parse(bytes[...]) else {
            Issue.record("not parsed")
            return
        }
        #expect(pdu == .centralIdentification(ediv: 0x1234, rand: 0x1122_3344_5566_7788))
        #expect(pdu.bytes == bytes)
    }

    @Test func identityAddressInformationRoundTrips() {
        let bytes: [UInt8] = [0x09, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1]
        guard case .success(let pdu) = SMPPDU.parse(bytes[...]) else {
            Issue.record("not parsed")
            return
        }
        #expect(pdu == .identityAddressInformation(.random, BDAddress("C1:22:33:44:55:66")!))
        #expect(pdu.bytes == bytes)
        #expect(SMPCode.identityAddressInformation.description == "0x09 Identity Address Information")
    }
}
