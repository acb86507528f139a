import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// The link-layer faults (`connection_failure`, `buffer_exhaustion`), seen from the host's side of
/// the socket as literal HCI bytes.
@Suite struct LinkFaultTests {
    static func yaml(_ fault: String) -> String {
        ConnectionTests.yaml + "\nfaults:\n  - \(fault)\n"
    }

    /// Read Request (ATT 0x0A) for handle 0x0003, the GAP Device Name value.
    static func readDeviceName(_ handle: UInt16) -> [UInt8] { ConnectionTests.att(handle, [0x0A, 0x03, 0x00]) }

    @Test func aConnectionAttemptDuringConnectionFailureEndsWith0x3EAndNoLinkThenSucceedsAfterwards() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 0, gateway: gw-a, type: connection_failure, duration_s: 2}"))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // The command itself is accepted: Command Status 0x00.
        #expect(try c.command(ConnectionTests.createConnection) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
        await h.advance(seconds: 1)
        // LE Connection Complete (subevent 0x01), status 0x3E Connection Failed to be Established,
        // handle 0, role central, public peer 00:1B:DC:10:00:01, the other parameters zero.
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E }
        #expect(
            cc.h4Bytes == [
                0x04, 0x3E, 0x13, 0x01, 0x3E, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            ])
        #expect(h.simulator.nodes[0].stats.connectionsFailed == 1)
        #expect(h.simulator.nodes[0].stats.connectionsEstablished == 0)
        // No link: Read RSSI on the handle a link would have had is Unknown Connection Identifier.
        #expect(
            try c.command([0x01, 0x05, 0x14, 0x02, 0x40, 0x00]) == [
                0x04, 0x0E, 0x07, 0x01, 0x05, 0x14, 0x02, 0x40, 0x00, 0x00,
            ])

        await h.advance(seconds: 1)  // the fault ends at 2 s
        // The attempt is over, so a new one is accepted (not 0x0C), and now it connects.
        #expect(try c.command(ConnectionTests.createConnection) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
        await h.advance(seconds: 1)
        let (ok, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        #expect(ok.payload[3] == 0x00)
        #expect(h.simulator.nodes[0].stats.connectionsEstablished == 1)
    }

    @Test func extendedCreateConnectionDuringConnectionFailureEndsInEnhancedConnectionComplete0x3E() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 0, gateway: gw-a, type: connection_failure}"))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // LE event mask with subevent 0x0A (bit 9): only the enhanced event is generated (§7.7.65.10).
        try c.command([0x01, 0x01, 0x20, 0x08, 0x1F, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        let ext: [UInt8] = [
            0x01, 0x43, 0x20, 0x1A, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x01,
            0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        #expect(try c.command(ext) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x43, 0x20])
        await h.advance(seconds: 1)
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E }
        #expect(
            cc.h4Bytes == [0x04, 0x3E, 0x1F, 0x0A, 0x3E, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00]
                + [UInt8](repeating: 0, count: 12 + 7))
    }

    @Test func bufferExhaustionWithholdsCreditsDropsTheNinthPacketAndReturnsCreditsAtTheEnd() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 2, gateway: gw-a, type: buffer_exhaustion, duration_s: 2}"))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // LE Read Buffer Size: 251 octets, 8 packets — the credit a host may have outstanding.
        #expect(try c.command(Bytes.leReadBufferSize) == [0x04, 0x0E, 0x07, 0x01, 0x02, 0x20, 0x00, 0xFB, 0x00, 0x08])
        try c.command(ConnectionTests.createConnection)
        await h.advance(seconds: 1)
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        let handle = UInt16(cc.payload[4]) | UInt16(cc.payload[5]) << 8
        let (lo, hi) = (UInt8(handle & 0xFF), UInt8(handle >> 8))
        await h.advance(seconds: 1)  // the fault starts at 2 s

        for _ in 0..<8 { c.send(Self.readDeviceName(handle)) }
        // The controller handles the host's packets in order: anything they caused precedes the
        // answer to this command. Nothing came: no Number Of Completed Packets, no ATT response.
        var before: [H4Packet] = []
        try c.command(Bytes.readBDAddr, before: &before)
        #expect(!before.contains { $0.type == .acl || $0.payload.first == 0x13 }, "\(before.map(\.h4Bytes))")
        #expect(h.simulator.nodes[0].stats.hostFlowControlViolations == 0)
        // A 9th packet without credit is a host flow-control violation, dropped.
        c.send(Self.readDeviceName(handle))
        before = []
        try c.command(Bytes.readBDAddr, before: &before)
        #expect(before.isEmpty)
        #expect(h.simulator.nodes[0].stats.hostFlowControlViolations == 1)

        await h.advance(seconds: 2)  // the fault ends at 4 s
        // All 8 credits come back in one event, then the 8 held requests are answered; the 9th is gone.
        let (nocp, _) = try ConnectionTests.until(c) { $0.payload.first == 0x13 }
        #expect(nocp.h4Bytes == [0x04, 0x13, 0x05, 0x01, lo, hi, 0x08, 0x00])
        var answers = 0
        before = []
        try c.command(Bytes.readBDAddr, before: &before)
        for p in before { if ConnectionTests.attPDU(p)?.first == 0x0B { answers += 1 } }
        #expect(answers == 8)
        // Credits flow again, one per packet.
        c.send(Self.readDeviceName(handle))
        let (again, _) = try ConnectionTests.until(c) { $0.payload.first == 0x13 }
        #expect(again.h4Bytes == [0x04, 0x13, 0x05, 0x01, lo, hi, 0x01, 0x00])
    }
}
