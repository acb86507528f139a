import BLETransport
import Testing

@testable import BLEHCI

@Suite struct ACLHeaderTests {
    // An ATT Read Request for handle 0x0003 on connection 0x0040: ACL header 40 20 07 00 (PB 0b10),
    // L2CAP length 3, CID 0x0004, then ATT 0A 03 00.
    let packet: [UInt8] = [0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]

    @Test func parsesHandleBoundaryBroadcastAndLength() {
        let p = ACLDataPacket.parse(packet[...])
        #expect(p?.header == ACLHeader(handle: 0x0040, packetBoundary: .firstFlushable, broadcast: 0, dataLength: 7))
        #expect(p.map { Array($0.data) } == Array(packet.dropFirst(4)))
    }

    @Test func buildsTheSameBytes() {
        let built = ACLDataPacket.build(handle: 0x0040, packetBoundary: .firstFlushable, data: packet.dropFirst(4))
        #expect(built.type == .acl)
        #expect(built.payload == packet)
    }

    @Test func continuingFragmentAndHighHandleBits() {
        var c = ByteCursor([0xFF, 0x1E, 0x00, 0x00])
        let h = ACLHeader.read(from: &c)
        #expect(h?.handle == 0x0EFF)
        #expect(h?.packetBoundary == .continuing)
    }

    @Test func lengthDisagreeingWithBytesIsRejected() {
        #expect(ACLDataPacket.parse(packet.dropLast()) == nil)
        #expect(ACLDataPacket.parse((packet + [0])[...]) == nil)
        #expect(ACLDataPacket.parse([0x40, 0x20, 0x07][...]) == nil)
    }
}
