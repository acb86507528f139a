import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// LE connections to a simulated sensor and its GATT server, as literal HCI/ACL/ATT byte exchanges.
@Suite struct ConnectionTests {
    static let yaml = """
        name: sensor
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        peripherals:
          - {name: sensor-1, local_name: Thermo-1, address: "00:1B:DC:10:00:01", position: [3, 0], interval_ms: 100}
        """

    /// LE Create Connection to 00:1B:DC:10:00:01 (public): scan 60 ms/60 ms, no filter policy,
    /// interval 30–50 ms, latency 0, supervision timeout 420 ms, CE length 0.
    static let createConnection: [UInt8] = [
        0x01, 0x0D, 0x20, 0x19, 0x60, 0x00, 0x60, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x00,
        0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]

    /// An ACL packet on `handle` carrying one ATT PDU in an L2CAP basic frame on CID 0x0004.
    static func att(_ handle: UInt16, _ pdu: [UInt8]) -> [UInt8] {
        [
            0x02, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(pdu.count + 4), 0x00, UInt8(pdu.count), 0x00, 0x04,
            0x00,
        ] + pdu
    }

    /// Reads packets until one matches; returns it and the ones before it.
    static func until(_ c: HCISocketHost, _ match: (H4Packet) -> Bool) throws -> (H4Packet, [H4Packet]) {
        var skipped: [H4Packet] = []
        while true {
            let p = try c.receive()
            if match(p) { return (p, skipped) }
            skipped.append(p)
        }
    }

    /// The ATT PDU inside an ACL packet from the controller.
    static func attPDU(_ p: H4Packet) -> [UInt8]? {
        guard p.type == .acl, p.payload.count >= 8, p.payload[6] == 0x04, p.payload[7] == 0x00 else { return nil }
        return Array(p.payload[8...])
    }

    @Test func connectDiscoverSubscribeReadRSSIAndDisconnect() async throws {
        let h = try SimHarness(Self.yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // Command Status success: the connection itself comes later.
        #expect(try c.command(Self.createConnection) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
        await h.advance(seconds: 1)
        let (cc, _) = try Self.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        // LE Connection Complete: status 0, handle, role central, public peer 00:1B:DC:10:00:01, interval 0x28.
        #expect(cc.payload[3] == 0x00)
        let handle = UInt16(cc.payload[4]) | UInt16(cc.payload[5]) << 8
        #expect(Array(cc.payload[6...13]) == [0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00])
        #expect(Array(cc.payload[14...15]) == [0x28, 0x00])

        // LE Read Remote Features → Command Status, then subevent 0x04 with the peer's features.
        let lo = UInt8(handle & 0xFF)
        let hi = UInt8(handle >> 8)
        #expect(try c.command([0x01, 0x16, 0x20, 0x02, lo, hi]) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x16, 0x20])
        let (rf, _) = try Self.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x04 }
        #expect(rf.h4Bytes == [0x04, 0x3E, 0x0C, 0x04, 0x00, lo, hi, 0x20, 0, 0, 0, 0, 0, 0, 0])
        // Read Remote Version Information → Command Status, then event 0x0C.
        try c.command([0x01, 0x1D, 0x04, 0x02, lo, hi])
        let (rv, _) = try Self.until(c) { $0.payload.first == 0x0C }
        #expect(rv.h4Bytes == [0x04, 0x0C, 0x08, 0x00, lo, hi, 0x09, 0xFF, 0xFF, 0x00, 0x00])
        // LE Set Data Length 251 octets / 2120 µs → Command Complete with the handle.
        #expect(
            try c.command([0x01, 0x22, 0x20, 0x06, lo, hi, 0xFB, 0x00, 0x48, 0x08])
                == [0x04, 0x0E, 0x06, 0x01, 0x22, 0x20, 0x00, lo, hi])

        // Exchange MTU (client 247) → server 247, with Number Of Completed Packets for our packet.
        c.send(Self.att(handle, [0x02, 0xF7, 0x00]))
        let (mtu, before) = try Self.until(c) { Self.attPDU($0) != nil }
        #expect(Self.attPDU(mtu) == [0x03, 0xF7, 0x00])
        #expect(
            before.contains {
                $0.h4Bytes == [0x04, 0x13, 0x05, 0x01, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x01, 0x00]
            })

        // Read By Group Type, primary services over the whole range: GAP 0x0001–0x0003, ESS 0x0004–0x000A,
        // GATT 0x000B–0x000E, Battery 0x000F–0x0012, Immediate Alert 0x0013–0x0015, Device Information 0x0016–0x001A.
        c.send(Self.att(handle, [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]))
        #expect(
            Self.attPDU(try Self.until(c) { Self.attPDU($0) != nil }.0)
                == [
                    0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18, 0x04, 0x00, 0x0A, 0x00, 0x1A, 0x18,
                    0x0B, 0x00, 0x0E, 0x00, 0x01, 0x18, 0x0F, 0x00, 0x12, 0x00, 0x0F, 0x18,
                    0x13, 0x00, 0x15, 0x00, 0x02, 0x18, 0x16, 0x00, 0x1A, 0x00, 0x0A, 0x18,
                ])

        // Read By Type 0x2803 in the ESS range: Temperature (read|notify, value 0x0006) and Humidity.
        c.send(Self.att(handle, [0x08, 0x04, 0x00, 0x0A, 0x00, 0x03, 0x28]))
        #expect(
            Self.attPDU(try Self.until(c) { Self.attPDU($0) != nil }.0)
                == [0x09, 0x07, 0x05, 0x00, 0x12, 0x06, 0x00, 0x6E, 0x2A, 0x08, 0x00, 0x12, 0x09, 0x00, 0x6F, 0x2A])

        // Reading past the database: Attribute Not Found.
        c.send(Self.att(handle, [0x08, 0x1B, 0x00, 0xFF, 0xFF, 0x03, 0x28]))
        #expect(Self.attPDU(try Self.until(c) { Self.attPDU($0) != nil }.0) == [0x01, 0x08, 0x1B, 0x00, 0x0A])

        // Subscribe to Temperature (CCCD 0x0007 = 0x0001) and get notifications once a second.
        c.send(Self.att(handle, [0x12, 0x07, 0x00, 0x01, 0x00]))
        #expect(Self.attPDU(try Self.until(c) { Self.attPDU($0) != nil }.0) == [0x13])
        await h.advance(seconds: 3)
        let (n, _) = try Self.until(c) { Self.attPDU($0)?.first == 0x1B }
        let pdu = try #require(Self.attPDU(n))
        #expect(pdu.count == 5 && pdu[1] == 0x06 && pdu[2] == 0x00)
        let celsius = Double(Int16(bitPattern: UInt16(pdu[3]) | UInt16(pdu[4]) << 8)) / 100
        #expect(celsius > 19 && celsius < 24)

        // Read RSSI: 3 m with n = 2, RSSI@1m −59 → −68.5 dBm, no shadowing.
        let r = try c.command([0x01, 0x05, 0x14, 0x02, UInt8(handle & 0xFF), UInt8(handle >> 8)])
        #expect(Array(r[0..<7]) == [0x04, 0x0E, 0x07, 0x01, 0x05, 0x14, 0x00])
        #expect(Int8(bitPattern: r[9]) == -68 || Int8(bitPattern: r[9]) == -69)

        // Disconnect: Command Status, then Disconnection Complete "Connection Terminated by Local Host".
        c.send([0x01, 0x06, 0x04, 0x03, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
        let (dc, _) = try Self.until(c) { $0.payload.first == 0x05 }
        #expect(dc.h4Bytes == [0x04, 0x05, 0x04, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x16])
        #expect(
            try c.command([0x01, 0x06, 0x04, 0x03, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
                == [0x04, 0x0F, 0x04, 0x02, 0x01, 0x06, 0x04])
    }

    @Test func cancellingAPendingConnectionReportsUnknownConnectionIdentifier() async throws {
        let h = try SimHarness(Self.yaml.replacingOccurrences(of: "position: [3, 0]", with: "position: [3000, 0]"))
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(Self.createConnection)
        await h.advance(seconds: 2)  // 3 km away: never heard
        // A second attempt while one is pending is disallowed.
        #expect(try c.command(Self.createConnection) == [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20])
        var before: [H4Packet] = []
        #expect(
            try c.command([0x01, 0x0E, 0x20, 0x00], before: &before) == [0x04, 0x0E, 0x04, 0x01, 0x0E, 0x20, 0x00])
        let (cc, _) = try Self.until(c) { $0.payload.first == 0x3E }
        #expect(cc.payload[2] == 0x01 && cc.payload[3] == 0x02)
    }

    @Test func aPeerThatWalksAwayTimesOutTheLink() async throws {
        let yaml = """
            name: walk
            radio: {loss_probability: 0, shadowing_sigma_db: 0, sensitivity_dbm: -90}
            gateways: [{id: gw-a, position: [0, 0]}]
            peripherals:
              - {name: s, address: "00:1B:DC:10:00:01", interval_ms: 100, speed_mps: 50, loop: false,
                 waypoints: [[3, 0], [3000, 0]]}
            """
        let h = try SimHarness(yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(Self.createConnection)
        await h.advance(seconds: 1, step: .milliseconds(100))
        _ = try Self.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        await h.advance(seconds: 20)
        let (dc, _) = try Self.until(c) { $0.payload.first == 0x05 }
        #expect(dc.payload[5] == 0x08)  // Connection Timeout
        #expect(h.simulator.nodes[0].stats.supervisionTimeouts == 1)
    }

    @Test func extendedCreateConnectionAnswersWithEnhancedConnectionCompleteAndUpdatesApply() async throws {
        let h = try SimHarness(Self.yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        // LE event mask: 0x01–0x05, 0x0A (bit 9, enhanced connection complete), 0x0D (bit 12).
        try c.command([0x01, 0x01, 0x20, 0x08, 0x1F, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        try c.command(Bytes.leSetExtendedScanParameters(active: false, interval: 16, window: 16))
        // The legacy command is now disallowed (§3.1.1) ...
        #expect(try c.command(Self.createConnection) == [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20])
        // ... and LE Extended Create Connection on LE 1M is the way.
        let ext: [UInt8] = [
            0x01, 0x43, 0x20, 0x1A, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x01,
            0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        #expect(try c.command(ext) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x43, 0x20])
        await h.advance(seconds: 1)
        let (cc, _) = try Self.until(c) { $0.payload.first == 0x3E }
        // Subevent 0x0A, 30 parameter bytes: status, handle, role, peer type, peer, two zero RPAs, 0x28, 0, 0x2A, 0.
        #expect(cc.payload[1] == 31 && cc.payload[2] == 0x0A && cc.payload[3] == 0x00)
        let handle = UInt16(cc.payload[4]) | UInt16(cc.payload[5]) << 8
        #expect(Array(cc.payload[26...32]) == [0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00])

        // LE Connection Update to 100 ms, latency 4, timeout 2 s.
        let update: [UInt8] = [
            0x01, 0x13, 0x20, 0x0E, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x50, 0x00, 0x50, 0x00, 0x04, 0x00,
            0xC8, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        #expect(try c.command(update) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x13, 0x20])
        let (uc, _) = try Self.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x03 }
        #expect(
            uc.h4Bytes == [
                0x04, 0x3E, 0x0A, 0x03, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x50, 0x00, 0x04, 0x00, 0xC8,
                0x00,
            ])
    }
}
