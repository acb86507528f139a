import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// The table of pairings on links where we are the peripheral: who gets a responder, and the answers a controller
/// waits for.
@Suite struct PeripheralPairingsTests {
    static let phone = SMPPairingResponder.Party(type: .random, address: BDAddress("4C:6B:86:AA:E9:CA")!)
    static let offer = PeripheralPairings.Offer(
        local: SMPPairingResponder.Party(type: .public, address: BDAddress("00:1B:DC:F0:00:01")!))

    @Test func withoutAnOfferNoLinkIsPairedAndAKeyRequestGetsTheNegativeReply() throws {
        var p = PeripheralPairings()
        #expect(p.linkOpened(handle: 0x40, peer: Self.phone, now: .zero).isEmpty)
        // The Pairing Request goes to the refusing SMPResponder (nil: not ours).
        #expect(p.received([0x01, 0x01, 0x00, 0x0D, 16, 0x03, 0x03], handle: 0x40, now: .zero) == nil)
        let answer = p.longTermKeyRequested(handle: 0x40, now: .zero)
        guard case .refuseLongTermKey(0x40)? = answer.first, answer.count == 1 else {
            Issue.record("\(answer)")
            return
        }
    }

    @Test func anOfferPairsLinksMadeAfterItUntilStoppedAndTheTimerEndsAStalledOne() throws {
        var p = PeripheralPairings()
        p.accept(Self.offer)
        let opened = p.linkOpened(handle: 0x40, peer: Self.phone, now: .zero)
        guard case .report(.connected(0x40, Self.phone))? = opened.first else {
            Issue.record("\(opened)")
            return
        }
        // A legacy Pairing Request (AuthReq 0x05: no SC bit) is refused on the link with reason 0x03.
        let answered = p.received([0x01, 0x01, 0x00, 0x05, 16, 0x03, 0x03], handle: 0x40, now: .zero)
        let refused = try #require(answered)
        guard case .send(0x40, let bytes)? = refused.first else {
            Issue.record("\(refused)")
            return
        }
        #expect(bytes == [0x05, 0x03])
        p.stop()
        #expect(p.linkOpened(handle: 0x41, peer: Self.phone, now: .zero).isEmpty)
        // A second offer; its link stalls after the request and the 30 s SMP timer ends it.
        p.accept(Self.offer)
        _ = p.linkOpened(handle: 0x42, peer: Self.phone, now: .zero)
        _ = p.received([0x01, 0x01, 0x00, 0x0D, 16, 0x03, 0x03], handle: 0x42, now: .seconds(1))
        #expect(p.nextDeadline == .seconds(31))
        #expect(p.tick(now: .seconds(30)).isEmpty)
        let timedOut = p.tick(now: .seconds(31))
        guard case .report(.failed(0x42, .timeout))? = timedOut.first else {
            Issue.record("\(timedOut)")
            return
        }
        let closed = p.linkClosed(handle: 0x42)
        let again = p.linkClosed(handle: 0x42)
        #expect(closed.count == 1 && again.isEmpty)
    }

    /// An iPhone pairs only when asked: the link opens with a Security Request (AuthReq Bonding | MITM | SC = 0x0D),
    /// and the link's ATT requests are answered from the enrolment's database until the link closes.
    @Test func anEnrollingLinkIsAskedForSecurityAndItsATTRequestsAreAnswered() throws {
        var p = PeripheralPairings()
        p.accept(Self.offer)
        let opened = p.linkOpened(handle: 0x40, peer: Self.phone, now: .zero)
        guard opened.count == 2, case .send(0x40, let request) = opened[1] else {
            Issue.record("\(opened)")
            return
        }
        #expect(request == [0x0B, 0x0D])
        // Read By Type 0x2A38 (Body Sensor Location) before encryption: Insufficient Authentication at handle 8.
        let earlyAnswer = p.attReceived([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x38, 0x2A], handle: 0x40)
        let early = try #require(earlyAnswer)
        guard case .sendATT(0x40, let error)? = early.first else {
            Issue.record("\(early)")
            return
        }
        #expect(error == [0x01, 0x08, 0x08, 0x00, 0x05])
        _ = p.encryptionChanged(handle: 0x40, on: true, now: .seconds(1))
        let laterAnswer = p.attReceived([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x38, 0x2A], handle: 0x40)
        let later = try #require(laterAnswer)
        guard case .sendATT(0x40, let value)? = later.first else {
            Issue.record("\(later)")
            return
        }
        #expect(value == [0x09, 0x03, 0x08, 0x00, 0x01], "encrypted: handle 8, Chest")
        let other = p.attReceived([0x0A, 0x03, 0x00], handle: 0x41)
        #expect(other == nil, "not an enrolling link: the bearer's")
        _ = p.linkClosed(handle: 0x40)
        let closed = p.attReceived([0x0A, 0x03, 0x00], handle: 0x40)
        #expect(closed == nil)
    }
}
