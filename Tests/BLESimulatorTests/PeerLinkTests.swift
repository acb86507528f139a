import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// The link below ATT: ACL reassembly, the peer's L2CAP LE signalling and SMP, `gatt_silence`,
/// `max_connections` and the Filter Accept List — literal HCI/ACL bytes over the H4 socket.
@Suite struct PeerLinkTests {
    /// An ACL packet on `handle` with Packet_Boundary_Flag `pb` carrying `data` as is.
    static func acl(_ handle: UInt16, pb: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0x02, UInt8(handle & 0xFF), UInt8(handle >> 8) | pb << 4, UInt8(data.count), 0x00] + data
    }

    @Test func continuationFragmentsAreReassembledBeforeTheFrameReachesTheServer() async throws {
        let (h, c, handle) = try await GATTServerTests.connected()
        let (lo, hi) = (UInt8(handle & 0xFF), UInt8(handle >> 8))
        // L2CAP basic frame Length 4, CID 0x0004, Write Request Alert Level (0x0015) = 0x02, in three
        // fragments: start (PB 0b00) with half the header, then two continuations (PB 0b01).
        c.send(Self.acl(handle, pb: 0b00, [0x04, 0x00]))
        c.send(Self.acl(handle, pb: 0b01, [0x04, 0x00, 0x12, 0x15]))
        c.send(Self.acl(handle, pb: 0b01, [0x00, 0x02]))
        var before: [H4Packet] = []
        try c.command(Bytes.readBDAddr, before: &before)
        // Every fragment took a buffer and gets its credit; the server answers the whole frame once.
        #expect(before.filter { $0.h4Bytes == [0x04, 0x13, 0x05, 0x01, lo, hi, 0x01, 0x00] }.count == 3)
        #expect(before.compactMap(ConnectionTests.attPDU) == [[0x13]])
        #expect(h.simulator.nodes[0].link(handle)?.gatt.writes.map(\.value) == [[0x02]])
        // A continuation with no start is dropped and counted.
        let unexpected = h.simulator.nodes[0].stats.unexpectedPackets
        c.send(Self.acl(handle, pb: 0b01, [0x0A, 0x03, 0x00]))
        before = []
        try c.command(Bytes.readBDAddr, before: &before)
        #expect(before.compactMap(ConnectionTests.attPDU).isEmpty)
        #expect(h.simulator.nodes[0].stats.unexpectedPackets == unexpected + 1)
    }

    @Test func thePeerAsksForConnectionParametersAndSecurityAndRecordsTheHostsAnswers() async throws {
        let yaml = ConnectionTests.yaml.replacingOccurrences(
            of: "interval_ms: 100}", with: "interval_ms: 100, request_connection_update: true, security_request: true}")
        let h = try SimHarness(yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(ConnectionTests.createConnection)
        await h.advance(seconds: 1, step: .milliseconds(100))
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        let handle = UInt16(cc.payload[4]) | UInt16(cc.payload[5]) << 8
        let (lo, hi) = (UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20)
        // Right after Connection Complete, on CID 0x0005: L2CAP_CONNECTION_PARAMETER_UPDATE_REQ
        // (Vol 3, Part A, §4.20) Code 0x12, Identifier 1, Length 8, Interval 0x0040–0x0050, Latency 4, Timeout 0x01F4.
        #expect(
            try c.receive().h4Bytes == [
                0x02, lo, hi, 0x10, 0x00, 0x0C, 0x00, 0x05, 0x00,
                0x12, 0x01, 0x08, 0x00, 0x40, 0x00, 0x50, 0x00, 0x04, 0x00, 0xF4, 0x01,
            ])
        // Then on CID 0x0006: SMP Security Request (Vol 3, Part H, §3.5.7), AuthReq 0x01 (bonding).
        #expect(try c.receive().h4Bytes == [0x02, lo, hi, 0x06, 0x00, 0x02, 0x00, 0x06, 0x00, 0x0B, 0x01])

        // The host accepts (Connection Parameter Update Response, Result 0x0000) ...
        c.send([0x02, lo, hi & 0x0F, 0x0A, 0x00, 0x06, 0x00, 0x05, 0x00, 0x13, 0x01, 0x02, 0x00, 0x00, 0x00])
        // ... declines pairing (Pairing Failed, reason 0x05 Pairing Not Supported) ...
        c.send([0x02, lo, hi & 0x0F, 0x06, 0x00, 0x02, 0x00, 0x06, 0x00, 0x05, 0x05])
        // ... and sends a signalling request the peer does not take (LE Credit Based Connection Request,
        // identifier 7): Command Reject, reason 0x0000 Command not understood (§4.1).
        c.send([
            0x02, lo, hi & 0x0F, 0x12, 0x00, 0x0E, 0x00, 0x05, 0x00,
            0x14, 0x07, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0xF7, 0x00, 0x17, 0x00, 0x01, 0x00,
        ])
        let (reject, _) = try ConnectionTests.until(c) { $0.type == .acl }
        #expect(
            reject.h4Bytes == [0x02, lo, hi, 0x0A, 0x00, 0x06, 0x00, 0x05, 0x00, 0x01, 0x07, 0x02, 0x00, 0x00, 0x00])
        // A Pairing Request is refused with Pairing Failed 0x05.
        c.send([0x02, lo, hi & 0x0F, 0x0B, 0x00, 0x07, 0x00, 0x06, 0x00, 0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
        let (failed, _) = try ConnectionTests.until(c) { $0.type == .acl }
        #expect(failed.h4Bytes == [0x02, lo, hi, 0x06, 0x00, 0x02, 0x00, 0x06, 0x00, 0x05, 0x05])

        let link = try #require(h.simulator.nodes[0].link(handle))
        #expect(link.connectionParameterUpdateResult == 0x0000)
        #expect(link.pairingFailedReason == 0x05)
        #expect(link.smpReceived.first == [0x05, 0x05])
    }

    /// For one named peripheral, and for every peer of the gateway (no `peripheral:`).
    @Test(arguments: ["peripheral: sensor-1, ", ""])
    func gattSilenceLeavesRequestsUnansweredWhileTheLinkStaysUp(target: String) async throws {
        let yaml =
            ConnectionTests.yaml
            + "\nfaults:\n  - {at_s: 2, gateway: gw-a, type: gatt_silence, \(target)duration_s: 3}\n"
        let (h, c, handle) = try await GATTServerTests.connected(yaml)
        let (lo, hi) = (UInt8(handle & 0xFF), UInt8(handle >> 8))
        await h.advance(seconds: 1)  // silence from 2 s
        c.send(LinkFaultTests.readDeviceName(handle))
        var before: [H4Packet] = []
        try c.command(Bytes.readBDAddr, before: &before)
        // The controller took the packet (credit back) but the peer says nothing.
        #expect(before.map(\.h4Bytes) == [[0x04, 0x13, 0x05, 0x01, lo, hi, 0x01, 0x00]])
        await h.advance(seconds: 1)
        #expect(try GATTServerTests.drain(c).isEmpty)
        let link = try #require(h.simulator.nodes[0].link(handle))
        #expect(link.attRequestsIgnored == 1)
        // The link is up: Read RSSI answers for the handle.
        #expect(try c.command([0x01, 0x05, 0x14, 0x02, lo, hi])[6] == 0x00)
        await h.advance(seconds: 2)  // ends at 5 s: answers again
        #expect(try GATTServerTests.request(c, handle, [0x0A, 0x03, 0x00]) == [0x0B] + Array("Thermo-1".utf8))
    }

    @Test func aCreateConnectionBeyondMaxConnectionsGetsConnectionLimitExceeded() async throws {
        let yaml = """
            name: two
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-a, position: [0, 0], max_connections: 1}]
            peripherals:
              - {name: sensor-1, address: "00:1B:DC:10:00:01", position: [3, 0], interval_ms: 100}
              - {name: sensor-2, address: "00:1B:DC:10:00:02", position: [4, 0], interval_ms: 100}
            """
        let (h, c, _) = try await GATTServerTests.connected(yaml)
        defer { withExtendedLifetime(h) {} }  // the harness owns the simulator, and so the link
        var second = ConnectionTests.createConnection
        second[10] = 0x02  // 00:1B:DC:10:00:02
        // Command Status 0x09 Connection Limit Exceeded (Vol 1, Part F, §2.9).
        #expect(try c.command(second) == [0x04, 0x0F, 0x04, 0x09, 0x01, 0x0D, 0x20])
    }

    static let twoSensors = """
        name: list
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        peripherals:
          - {name: near, address: "00:1B:DC:10:00:02", position: [1, 0], interval_ms: 100}
          - {name: listed, address: "00:1B:DC:10:00:01", position: [3, 0], interval_ms: 100}
        """

    @Test func initiatorFilterPolicyOneConnectsToADeviceOnTheFilterAcceptList() async throws {
        let h = try SimHarness(Self.twoSensors)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // LE Read Filter Accept List Size (§7.8.14) → 8; Clear (§7.8.15); Add public 00:1B:DC:10:00:01 (§7.8.16).
        #expect(try c.command([0x01, 0x0F, 0x20, 0x00]) == [0x04, 0x0E, 0x05, 0x01, 0x0F, 0x20, 0x00, 0x08])
        #expect(try c.command([0x01, 0x10, 0x20, 0x00]) == [0x04, 0x0E, 0x04, 0x01, 0x10, 0x20, 0x00])
        let add: [UInt8] = [0x01, 0x11, 0x20, 0x07, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00]
        #expect(try c.command(add) == [0x04, 0x0E, 0x04, 0x01, 0x11, 0x20, 0x00])
        // LE Create Connection, Initiator_Filter_Policy 1, peer address ignored (zero).
        var create = ConnectionTests.createConnection
        create[8] = 0x01
        for i in 10...15 { create[i] = 0 }
        #expect(try c.command(create) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
        // While the initiator uses the list it may not change: Command Disallowed (§7.8.16).
        #expect(try c.command(add) == [0x04, 0x0E, 0x04, 0x01, 0x11, 0x20, 0x0C])
        await h.advance(seconds: 1, step: .milliseconds(100))
        // The listed sensor, not the nearer one, is connected.
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        #expect(cc.payload[3] == 0x00)
        #expect(Array(cc.payload[7...13]) == [0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00])
        // Remove (§7.8.17) works again once nothing is pending.
        #expect(
            try c.command([0x01, 0x12, 0x20, 0x07, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00])
                == [0x04, 0x0E, 0x04, 0x01, 0x12, 0x20, 0x00])
        // Eight entries fit; a ninth is Memory Capacity Exceeded (0x07).
        for i in 0..<8 { try c.command([0x01, 0x11, 0x20, 0x07, 0x01, UInt8(i), 0, 0, 0, 0, 0xC0]) }
        #expect(
            try c.command([0x01, 0x11, 0x20, 0x07, 0x01, 0x08, 0, 0, 0, 0, 0xC0])
                == [0x04, 0x0E, 0x04, 0x01, 0x11, 0x20, 0x07])
    }

    @Test func scanningFilterPolicyOneReportsOnlyListedAdvertisers() async throws {
        let h = try SimHarness(Self.twoSensors)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command([0x01, 0x11, 0x20, 0x07, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00])
        // LE Set Scan Parameters, passive, 10 ms / 10 ms, public, Scanning_Filter_Policy 0x01.
        #expect(
            try c.command([0x01, 0x0B, 0x20, 0x07, 0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x01])
                == [0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00])
        try c.command(Bytes.leSetScanEnable(true))
        // Clearing the list while a scan uses it is disallowed.
        #expect(try c.command([0x01, 0x10, 0x20, 0x00]) == [0x04, 0x0E, 0x04, 0x01, 0x10, 0x20, 0x0C])
        await h.advance(seconds: 2)
        var reports: [H4Packet] = []
        try c.command(Bytes.leSetScanEnable(false), before: &reports)
        let advertisers = Set(
            reports.filter { $0.payload.first == 0x3E && $0.payload[2] == 0x02 }.map {
                Array($0.payload[6...11])
            })
        #expect(advertisers == [[0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00]])
    }
}
