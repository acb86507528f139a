import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// An ACL data packet from its literal H4 payload (no indicator): Handle|PB|BC (2), Data_Total_Length (2), data.
func aclPacket(_ bytes: [UInt8]) -> ACLDataPacket {
    guard let p = ACLDataPacket.parse(bytes[...]) else { fatalError("test vector does not parse: \(bytes)") }
    return p
}

/// Each byte of `frame` as its own ACL packet on `handle`: the first with PB 0b10, the rest 0b01.
func byteByByte(_ frame: [UInt8], handle: UInt16) -> [ACLDataPacket] {
    frame.enumerated().map { i, b in
        aclPacket([UInt8(handle & 0xFF), UInt8(handle >> 8) | (i == 0 ? 0x20 : 0x10), 0x01, 0x00, b])
    }
}

/// ACL fragments into L2CAP basic frames (Core v5.4, Vol 4, Part E, §5.4.2; Vol 3, Part A, §3.1, §7.2).
@Suite struct ACLReassemblerTests {
    /// Exchange MTU Response (server 247) on handle 0x0040, in one packet with PB 0b10.
    static let mtuResponse: [UInt8] = [0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7, 0x00]
    /// A Read Response of 13 octets: L2CAP Length 0x000E on CID 0x0004.
    static let readResponseFrame: [UInt8] =
        [0x0E, 0x00, 0x04, 0x00, 0x0B] + Array("Thermo-1 hall".utf8)

    @Test func aWholeFrameInOnePacketIsDeliveredAtOnce() {
        var r = ACLReassembler()
        let out = r.receive(aclPacket(Self.mtuResponse))
        #expect(out?.handle == 0x0040)
        #expect(out?.frame == L2CAPFrame(channel: .att, payload: [0x03, 0xF7, 0x00]))
        #expect(r.counters.frames == 1)
        #expect(r.openHandles.isEmpty)
    }

    @Test func fragmentsSplittingEvenTheLengthFieldAreJoined() {
        var r = ACLReassembler()
        // 1 octet (half the Length field), then 5, then the remaining 12.
        #expect(r.receive(aclPacket([0x40, 0x20, 0x01, 0x00, 0x0E])) == nil)
        #expect(r.receive(aclPacket([0x40, 0x10, 0x05, 0x00, 0x00, 0x04, 0x00, 0x0B, 0x54])) == nil)
        let out = r.receive(aclPacket([0x40, 0x10, 0x0C, 0x00] + Array("hermo-1 hall".utf8)))
        #expect(out?.frame.channel == .att)
        #expect(out?.frame.payload == [0x0B] + Array("Thermo-1 hall".utf8))
        #expect(r.counters.continuations == 2)
    }

    @Test func aFrameFedOneOctetPerPacketComesOutOnceWhole() {
        var r = ACLReassembler()
        var frames: [L2CAPFrame] = []
        for p in byteByByte(Self.readResponseFrame, handle: 0x0041) {
            if let (h, f) = r.receive(p) {
                #expect(h == 0x0041)
                frames.append(f)
            }
        }
        #expect(frames == [L2CAPFrame(channel: .att, payload: Array(Self.readResponseFrame[4...]))])
        #expect(
            r.counters
                == {
                    var c = ACLReassembler.Counters()
                    c.frames = 1
                    c.continuations = 17
                    return c
                }())
    }

    @Test func fragmentsOfTwoLinksInterleavedAreJoinedPerHandle() {
        var r = ACLReassembler()
        let a = byteByByte([0x03, 0x00, 0x04, 0x00, 0x03, 0x17, 0x00], handle: 0x0040)
        let b = byteByByte([0x02, 0x00, 0x06, 0x00, 0x05, 0x05], handle: 0x0041)
        var got: [UInt16: L2CAPFrame] = [:]
        for i in 0..<max(a.count, b.count) {
            for list in [a, b] where i < list.count {
                if let (h, f) = r.receive(list[i]) { got[h] = f }
            }
        }
        #expect(got[0x0040] == L2CAPFrame(channel: .att, payload: [0x03, 0x17, 0x00]))
        #expect(got[0x0041] == L2CAPFrame(channel: .securityManager, payload: [0x05, 0x05]))
    }

    @Test func aContinuationWithNoStartIsCountedAndDropped() {
        var r = ACLReassembler()
        #expect(r.receive(aclPacket([0x40, 0x10, 0x03, 0x00, 0x03, 0xF7, 0x00])) == nil)
        #expect(r.counters.orphanContinuations == 1)
        #expect(r.receive(aclPacket(Self.mtuResponse)) != nil)
    }

    @Test func aNewStartWhileAFrameIsOpenDropsThePartialFrame() {
        var r = ACLReassembler()
        #expect(r.receive(aclPacket([0x40, 0x20, 0x06, 0x00, 0x0E, 0x00, 0x04, 0x00, 0x0B, 0x54])) == nil)
        let out = r.receive(aclPacket(Self.mtuResponse))
        #expect(out?.frame.payload == [0x03, 0xF7, 0x00])
        #expect(r.counters.interruptedFrames == 1)
        // The dropped frame's tail now has no start of its own: it is an orphan only if nothing is open, and here
        // nothing is.
        #expect(r.receive(aclPacket([0x40, 0x10, 0x02, 0x00, 0x68, 0x65])) == nil)
        #expect(r.counters.orphanContinuations == 1)
    }

    @Test func moreOctetsThanLengthAnnouncedDropTheFrame() {
        var r = ACLReassembler()
        // Length 1 but 2 octets of payload, in one packet.
        #expect(r.receive(aclPacket([0x40, 0x20, 0x06, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13, 0x13])) == nil)
        #expect(r.counters.overlongFrames == 1)
        // Length 3: 2 octets in the start, then a continuation of 2.
        #expect(r.receive(aclPacket([0x40, 0x20, 0x06, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7])) == nil)
        #expect(r.receive(aclPacket([0x40, 0x10, 0x02, 0x00, 0x00, 0x00])) == nil)
        #expect(r.counters.overlongFrames == 2)
        #expect(r.openHandles.isEmpty)
        #expect(r.counters.frames == 0)
    }

    @Test func aFrameOverTheBoundIsDroppedWithItsContinuations() {
        var r = ACLReassembler(maximumFrameSize: 8)
        // Length 10: a 14-octet frame against a bound of 8.
        #expect(r.receive(aclPacket([0x40, 0x20, 0x06, 0x00, 0x0A, 0x00, 0x04, 0x00, 0x0B, 0x01])) == nil)
        #expect(r.receive(aclPacket([0x40, 0x10, 0x04, 0x00, 0x02, 0x03, 0x04, 0x05])) == nil)
        #expect(r.receive(aclPacket([0x40, 0x10, 0x04, 0x00, 0x06, 0x07, 0x08, 0x09])) == nil)
        #expect(r.counters.oversizedFrames == 1)
        #expect(r.counters.orphanContinuations == 0 && r.counters.interruptedFrames == 0)
        #expect(r.receive(aclPacket(Self.mtuResponse)) != nil)
        #expect(r.counters.interruptedFrames == 0)
    }

    @Test func reservedBoundaryAndBroadcastFlagsAreCountedAndDropped() {
        var r = ACLReassembler()
        #expect(r.receive(aclPacket([0x40, 0x30, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7, 0x00])) == nil)
        #expect(r.receive(aclPacket([0x40, 0x60, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7, 0x00])) == nil)
        #expect(r.counters.reservedFlags == 2)
    }

    @Test func aLinkThatEndsTakesItsPartialFrameWithIt() {
        var r = ACLReassembler()
        _ = r.receive(aclPacket([0x40, 0x20, 0x02, 0x00, 0x0E, 0x00]))
        r.remove(handle: 0x0040)
        #expect(r.counters.abandonedFrames == 1)
        #expect(r.receive(aclPacket([0x40, 0x10, 0x02, 0x00, 0x04, 0x00])) == nil)
        #expect(r.counters.orphanContinuations == 1)
    }
}
