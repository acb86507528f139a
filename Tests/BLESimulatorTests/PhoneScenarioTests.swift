import BLETransport
import Testing

@testable import BLESimulator

/// `phones:` in a scenario: what a phone becomes, the addresses it rotates through, and where bad keys are reported.
@Suite struct PhoneScenarioTests {
    static func yaml(_ phone: String) -> String {
        """
        name: phones
        gateways: [{id: gw-a, position: [0, 0, 2]}]
        phones:
          - \(phone)
        """
    }

    @Test func aPhoneRotatesResolvablePrivateAddressesThatItsKeyResolves() throws {
        let s = try ScenarioLoader.parse(
            Self.yaml(
                "{name: p, address: \"5C:F3:70:00:00:01\", irk: ec0234a357c8ad05341010a60a397d9b, rotate_s: 10, position: [1, 0, 1]}"
            ))
        let e = try #require(s.emitters.first)
        #expect(e.role == .phone && e.addressType == 0)
        let phone = try #require(e.phone)
        #expect(phone.pairing == .secureConnections && phone.rotation == 10)
        #expect(phone.epoch(at: 9.99) == 0 && phone.epoch(at: 10) == 1)
        let addresses = (0..<20).map { phone.address(epoch: Int64($0), identity: e.address) }
        #expect(Set(addresses).count == 20)
        for a in addresses {
            // §1.3.2.2: the two most significant bits are 0b01, and hash = ah(IRK, prand).
            #expect(a.rawValue >> 46 == 0b01)
            #expect(SimSecurity.ah(irk: phone.irk, prand: UInt32(a.rawValue >> 24)) == UInt32(a.rawValue & 0xFF_FFFF))
        }
    }

    /// Core v5.4, Vol 3, Part H, Appendix D.7: ah(IRK, 0x708194) = 0x0DFBAA, the simulator's own AES.
    @Test func theSimulatorsAhMatchesTheSpecificationSample() {
        let irk = HexDigits.parseDigits("ec0234a357c8ad05341010a60a397d9b", count: 16)!
        #expect(SimSecurity.ah(irk: irk, prand: 0x70_8194) == 0x0D_FBAA)
    }

    @Test func aPhoneWithoutAKeyOrWithAnUnknownPairingIsRefusedWithItsPosition() {
        #expect(throws: ScenarioError.self) { try ScenarioLoader.parse(Self.yaml("{name: p, position: [1, 0, 1]}")) }
        #expect(throws: ScenarioError.self) {
            try ScenarioLoader.parse(Self.yaml("{name: p, irk: 00112233, position: [1, 0, 1]}"))
        }
        do {
            _ = try ScenarioLoader.parse(
                Self.yaml("{name: p, irk: ec0234a357c8ad05341010a60a397d9b, pairing: sometimes, position: [1, 0, 1]}"))
            Issue.record("accepted pairing: sometimes")
        } catch let e as ScenarioError {
            #expect(e.line == 4 && e.message.contains("never, secure_connections, legacy_only"))
        } catch {
            Issue.record("\(error)")
        }
        // Phone keys on a beacon say where they belong.
        #expect(throws: ScenarioError.self) {
            try ScenarioLoader.parse(
                "name: b\ngateways: [{id: g, position: [0, 0, 0]}]\nbeacons:\n  - {name: b, uuid: 00112233445566778899aabbccddeeff, irk: ec0234a357c8ad05341010a60a397d9b, position: [1, 0, 0]}"
            )
        }
    }

    /// An iPhone (`pairs_when: asked`) opens with a read, not a Pairing Request, and pairs when the read is refused
    /// for want of security or when asked with a Security Request; one already pairing ignores a Security Request.
    @Test func anIPhonePairsOnlyWhenAsked() throws {
        let spec = try #require(
            try ScenarioLoader.parse(
                Self.yaml(
                    "{name: p, address: \"5C:F3:70:00:00:01\", irk: ec0234a357c8ad05341010a60a397d9b, pairs_when: asked, position: [1, 0, 1]}"
                )
            )
            .emitters.first?.phone)
        #expect(spec.waitsToBeAsked)
        func phone() -> SimPhonePairing {
            SimPhonePairing(
                spec: spec, identity: BDAddress("5C:F3:70:00:00:01")!,
                phoneAddress: BDAddress("4C:6B:86:AA:E9:CA")!,
                gateway: (0, BDAddress("00:1B:DC:F0:00:01")!), seed: [1])
        }
        var byRead = phone()
        #expect(
            byRead.openingPDU.cid == SimCID.att && byRead.openingPDU.pdu == [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x38, 0x2A])
        #expect(byRead.attReceived([0x01, 0x08, 0x08, 0x00, 0x0A]) == nil, "not found is no reason to pair")
        #expect(byRead.attReceived([0x01, 0x08, 0x08, 0x00, 0x05]) == byRead.opening)
        #expect(byRead.askedBy == .attError(0x05))
        #expect(byRead.receive([0x0B, 0x0D]).smp.isEmpty, "already pairing: the Security Request is ignored")
        var byRequest = phone()
        #expect(byRequest.receive([0x0B, 0x0D]).smp == [byRequest.opening])
        #expect(byRequest.askedBy == .securityRequest)
        #expect(byRequest.attReceived([0x01, 0x08, 0x08, 0x00, 0x05]) == nil, "asked once")
        do {
            _ = try ScenarioLoader.parse(
                Self.yaml(
                    "{name: p, address: \"5C:F3:70:00:00:01\", irk: ec0234a357c8ad05341010a60a397d9b, pairs_when: later, position: [1, 0, 1]}"
                ))
            Issue.record("accepted pairs_when: later")
        } catch {
            #expect("\(error)".contains("pairs_when must be connected (Android, BlueZ) or asked (iOS)"))
        }
    }
}
