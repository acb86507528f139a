import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// LE ACL flow control on the host's side (Core v5.4, Vol 4, Part E, §4.1.1, §4.3, §7.7.19).
@Suite struct ACLSchedulerTests {
    /// The entries of a literal Number Of Completed Packets event (§7.7.19) for one handle.
    static func done(_ handle: UInt16, _ n: UInt8) -> [HCIEvent.CompletedPackets] {
        let bytes: [UInt8] = [0x13, 0x05, 0x01, UInt8(handle & 0xFF), UInt8(handle >> 8), n, 0x00]
        guard case .numberOfCompletedPackets(let entries)? = HCIEvent.parse(bytes[...]) else { fatalError() }
        return entries
    }

    /// An ATT Write Command frame (CID 0x0004) of `n` octets of L2CAP payload.
    static func frame(_ n: Int, tag: UInt8 = 0) -> [UInt8] {
        L2CAPFrame(channel: .att, payload: [0x52] + [UInt8](repeating: tag, count: n - 1)).bytes
    }

    @Test func aFrameIsCutIntoFragmentsOfAtMostTheBufferLength() {
        var s = ACLScheduler(bufferLength: 4, bufferCount: 8)
        // Exchange MTU Request, client 247: a 7-octet frame → 4 + 3, first 0b00 then 0b01.
        #expect(s.enqueue([0x03, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00], handle: 0x0040) == .queued(fragments: 2))
        #expect(
            s.nextPackets().map(\.h4Bytes) == [
                [0x02, 0x40, 0x00, 0x04, 0x00, 0x03, 0x00, 0x04, 0x00],
                [0x02, 0x40, 0x10, 0x03, 0x00, 0x02, 0xF7, 0x00],
            ])
        #expect(s.inFlight == 2 && s.counters.sent == 2)
    }

    @Test func fragmentsReassembleToTheSameFrameForEveryLength() {
        for length in 5...40 {
            for bufferLength in [1, 3, 27] {
                var s = ACLScheduler(bufferLength: bufferLength, bufferCount: 64)
                var r = ACLReassembler()
                let f = Self.frame(length - 4, tag: UInt8(length))
                _ = s.enqueue(f, handle: 0x0042)
                var out: [L2CAPFrame] = []
                for p in s.nextPackets() {
                    #expect(p.payload.count - 4 <= bufferLength)
                    if let (_, frame) = r.receive(aclPacket(p.payload)) { out.append(frame) }
                }
                #expect(out.map(\.bytes) == [f], "length \(length), buffer \(bufferLength)")
            }
        }
    }

    @Test func nothingIsSentBeyondTheCreditAndCompletedPacketsReturnIt() {
        var s = ACLScheduler(bufferLength: 27, bufferCount: 2)
        for i in 0..<3 { _ = s.enqueue(Self.frame(3, tag: UInt8(i)), handle: 0x0040) }
        #expect(s.nextPackets().map { $0.payload.last } == [0, 1])
        #expect(s.credits == 0 && s.queued == 1 && s.counters.stalls == 1)
        #expect(s.nextPackets().isEmpty)
        #expect(s.counters.stalls == 1)  // still the same stall
        s.completed(Self.done(0x0040, 1))
        #expect(s.nextPackets().map { $0.payload.last } == [2])
        s.completed(Self.done(0x0040, 2))
        #expect(s.credits == 2 && s.inFlight == 0)
        // More completions than packets in flight are not credit.
        s.completed(Self.done(0x0040, 1) + Self.done(0x0099, 3))
        #expect(s.credits == 2 && s.counters.unexpectedCompletions == 4)
    }

    @Test func linksTakeTurnsSoABusyLinkDoesNotStarveAnother() {
        var s = ACLScheduler(bufferLength: 27, bufferCount: 4)
        for _ in 0..<6 { _ = s.enqueue(Self.frame(3), handle: 0x0040) }
        for _ in 0..<2 { _ = s.enqueue(Self.frame(3), handle: 0x0041) }
        func handles(_ ps: [H4Packet]) -> [UInt8] { ps.map { $0.payload[0] } }
        #expect(handles(s.nextPackets()) == [0x40, 0x41, 0x40, 0x41])
        s.completed(Self.done(0x0040, 2) + Self.done(0x0041, 2))
        #expect(handles(s.nextPackets()) == [0x40, 0x40, 0x40, 0x40])
        #expect(s.inFlight(handle: 0x0040) == 4 && s.inFlight(handle: 0x0041) == 0)
    }

    @Test func aFragmentedFrameStaysInOrderOnItsLinkWhileOthersInterleave() {
        var s = ACLScheduler(bufferLength: 2, bufferCount: 16)
        _ = s.enqueue([0x02, 0x00, 0x04, 0x00, 0xAA, 0xBB], handle: 0x0040)
        _ = s.enqueue([0x02, 0x00, 0x06, 0x00, 0x05, 0x05], handle: 0x0041)
        let sent = s.nextPackets()
        var r = ACLReassembler()
        let frames = sent.compactMap { r.receive(aclPacket($0.payload)) }
        #expect(frames.map(\.handle) == [0x0040, 0x0041])
        #expect(frames.map(\.frame.payload) == [[0xAA, 0xBB], [0x05, 0x05]])
        #expect(sent.map { $0.payload[0] } == [0x40, 0x41, 0x40, 0x41, 0x40, 0x41])
    }

    @Test func disconnectionDropsTheQueueAndReturnsTheCreditOfUnacknowledgedPackets() {
        var s = ACLScheduler(bufferLength: 27, bufferCount: 2)
        for _ in 0..<3 { _ = s.enqueue(Self.frame(3), handle: 0x0040) }
        _ = s.enqueue(Self.frame(3), handle: 0x0041)
        #expect(s.nextPackets().map { $0.payload[0] } == [0x40, 0x41])
        #expect(s.disconnected(handle: 0x0040) == 2)
        #expect(s.counters.droppedOnDisconnect == 2 && s.counters.creditsReclaimed == 1)
        #expect(s.credits == 1 && s.queued == 0)
        // The controller does not complete a disconnected handle's packets (§4.3); if it did, no credit is invented.
        s.completed(Self.done(0x0040, 1))
        #expect(s.credits == 1)
        s.completed(Self.done(0x0041, 1))
        #expect(s.credits == 2)
    }

    @Test func aFullQueueRefusesAWholeFrameAndQueuesNoPartOfIt() {
        var s = ACLScheduler(bufferLength: 4, bufferCount: 1, queueLimit: 4)
        #expect(s.enqueue(Self.frame(6), handle: 0x0040) == .queued(fragments: 3))
        #expect(s.enqueue(Self.frame(6), handle: 0x0040) == .queueFull)
        #expect(s.queued(handle: 0x0040) == 3 && s.counters.framesRejected == 1)
        #expect(s.enqueue([0x00, 0x00, 0x04, 0x00], handle: 0x0040) == .queued(fragments: 1))
    }
}
