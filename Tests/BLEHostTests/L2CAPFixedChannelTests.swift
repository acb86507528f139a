import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// The LE signaling channel (Core v5.4, Vol 3, Part A, §4) and the SMP channel of a host that does not pair
/// (Vol 3, Part H, §3.5.5), as literal commands in and out.
@Suite struct L2CAPFixedChannelTests {
    @Test func basicFrameHeaderIsLengthThenChannelLittleEndian() {
        let f = L2CAPFrame(channel: .att, payload: [0x02, 0xF7, 0x00])
        #expect(f.bytes == [0x03, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00])
        #expect(L2CAPFrame.parse(f.bytes[...]) == f)
        #expect(L2CAPFrame.parse([0x04, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00][...]) == nil)
        #expect("\(L2CAPChannelID(rawValue: 0x0040))" == "0x0040")
        #expect("\(L2CAPChannelID.leSignaling)" == "0x0005 LE signaling")
    }

    /// §4.20: interval 30–50 ms (0x0018–0x0028), latency 0, timeout 5 s (0x01F4).
    @Test func aParameterUpdateInRangeIsAcceptedAndAppliedWithLEConnectionUpdate() {
        var s = L2CAPLESignaling()
        let actions = s.receive([0x12, 0x01, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
        #expect(
            actions == [
                .reply([0x13, 0x01, 0x02, 0x00, 0x00, 0x00]),
                .updateConnection(
                    LEConnectionParameters(
                        intervalMin: 0x18, intervalMax: 0x28, maxLatency: 0, supervisionTimeout: 0x01F4)),
            ])
        #expect(s.counters.parameterUpdatesAccepted == 1)
    }

    @Test func aParameterUpdateOutOfRangeIsRejectedAndNotApplied() {
        var s = L2CAPLESignaling()
        // Interval min 0x0005 < 6.
        #expect(
            s.receive([0x12, 0x02, 0x08, 0x00, 0x05, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
                == [.reply([0x13, 0x02, 0x02, 0x00, 0x01, 0x00])])
        // Min above max.
        #expect(
            s.receive([0x12, 0x03, 0x08, 0x00, 0x30, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
                == [.reply([0x13, 0x03, 0x02, 0x00, 0x01, 0x00])])
        // Latency 500 > 499.
        #expect(
            s.receive([0x12, 0x04, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0xF4, 0x01, 0x80, 0x0C])
                == [.reply([0x13, 0x04, 0x02, 0x00, 0x01, 0x00])])
        // Interval max 4 s, timeout 8 s: 8000 ms is not more than (1 + 0) × 4000 × 2.
        #expect(
            s.receive([0x12, 0x05, 0x08, 0x00, 0x18, 0x00, 0x80, 0x0C, 0x00, 0x00, 0x20, 0x03])
                == [.reply([0x13, 0x05, 0x02, 0x00, 0x01, 0x00])])
        // One unit more of timeout and it is accepted.
        #expect(s.receive([0x12, 0x06, 0x08, 0x00, 0x18, 0x00, 0x80, 0x0C, 0x00, 0x00, 0x21, 0x03]).count == 2)
        #expect(s.counters.parameterUpdatesRejected == 4 && s.counters.parameterUpdatesAccepted == 1)
    }

    @Test func anUnknownRequestGetsCommandRejectNotUnderstood() {
        var s = L2CAPLESignaling()
        // LE Credit Based Connection Request (0x14), SPSM 0x0080: this host offers no LE CoC.
        #expect(
            s.receive([0x14, 0x07, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x17, 0x00, 0x17, 0x00, 0x01, 0x00])
                == [.reply([0x01, 0x07, 0x02, 0x00, 0x00, 0x00])])
        // A reserved code.
        #expect(s.receive([0x7F, 0x08, 0x00, 0x00]) == [.reply([0x01, 0x08, 0x02, 0x00, 0x00, 0x00])])
        #expect(s.counters.commandsRejected == 2)
    }

    @Test func aDisconnectionRequestNamesAChannelThatDoesNotExist() {
        var s = L2CAPLESignaling()
        // Disconnection Request DCID 0x0041, SCID 0x0080 → Command Reject 0x0002, Local 0x0041, Remote 0x0080.
        #expect(
            s.receive([0x06, 0x0C, 0x04, 0x00, 0x41, 0x00, 0x80, 0x00])
                == [.reply([0x01, 0x0C, 0x06, 0x00, 0x02, 0x00, 0x41, 0x00, 0x80, 0x00])])
    }

    @Test func aCommandOverTheSignalingMTUIsRejectedWithOurMTU() {
        var s = L2CAPLESignaling()
        // 24 octets: a header and 20 octets of data, one more than MTU_sig 23.
        let big: [UInt8] = [0x14, 0x0D, 0x14, 0x00] + [UInt8](repeating: 0, count: 20)
        #expect(s.receive(big) == [.reply([0x01, 0x0D, 0x04, 0x00, 0x01, 0x00, 0x17, 0x00])])
        // 23 octets is within it (and not understood).
        #expect(
            s.receive([0x14, 0x0D, 0x13, 0x00] + [UInt8](repeating: 0, count: 19))
                == [.reply([0x01, 0x0D, 0x02, 0x00, 0x00, 0x00])])
    }

    @Test func responsesAndMalformedCommandsAreNotAnsweredWithAReply() {
        var s = L2CAPLESignaling()
        // An unsolicited Connection Parameter Update Response and a Command Reject: nothing to answer.
        #expect(s.receive([0x13, 0x09, 0x02, 0x00, 0x00, 0x00]).isEmpty)
        #expect(s.receive([0x01, 0x0A, 0x02, 0x00, 0x00, 0x00]).isEmpty)
        #expect(s.counters.responsesIgnored == 2)
        // Identifier 0x00 is illegal (§4); a frame shorter than a header says nothing.
        #expect(s.receive([0x12, 0x00, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01]).isEmpty)
        #expect(s.receive([0x12, 0x01]).isEmpty)
        #expect(s.counters.malformed == 2)
        // A request whose Length disagrees with its data is rejected, not acted on.
        #expect(s.receive([0x12, 0x0B, 0x08, 0x00, 0x18, 0x00]) == [.reply([0x01, 0x0B, 0x02, 0x00, 0x00, 0x00])])
        #expect(s.counters.malformed == 3 && s.counters.parameterUpdatesAccepted == 0)
    }
}
