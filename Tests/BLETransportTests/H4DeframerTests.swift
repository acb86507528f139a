import Testing

@testable import BLETransport

@Suite struct H4DeframerTests {
    // HCI_Reset command then its Command Complete (Core v5.4, Vol 4, Part E, §7.3.2 and §7.7.14).
    let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]

    @Test func splitsConsecutivePackets() {
        var d = H4Deframer()
        d.append(reset + resetComplete)
        #expect(d.next() == H4Packet(type: .command, payload: [0x03, 0x0C, 0x00]))
        #expect(d.next() == H4Packet(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]))
        #expect(d.next() == nil)
    }

    @Test func deliversTheSamePacketsWhenFedOneByteAtATime() {
        var d = H4Deframer()
        var out: [H4Packet] = []
        for b in reset + resetComplete {
            d.append([b])
            while let p = d.next() { out.append(p) }
        }
        #expect(out.map(\.type) == [.command, .event])
        #expect(d.pendingBytes == 0)
    }

    @Test func resynchronisesAfterGarbageAndCountsIt() {
        var d = H4Deframer()
        d.append([0xFF, 0x00, 0x77] + resetComplete)
        #expect(d.next()?.type == .event)
        #expect(d.garbageBytes == 3)
    }

    @Test func treatsAnOversizedACLHeaderAsGarbage() {
        var d = H4Deframer(maxPayload: 1024)
        // ACL header announcing 0xFFFF bytes, then a real event.
        d.append([0x02, 0x40, 0x00, 0xFF, 0xFF] + resetComplete)
        var got: H4Packet?
        while let p = d.next() { got = p }
        #expect(got?.type == .event)
        #expect(d.oversizedHeaders >= 1)
    }
}
