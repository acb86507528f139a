import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// The peer's GATT server beyond discovery: indications and their confirmations, writes, Read Blob,
/// Service Changed, notification rates — literal ATT PDUs over the simulator's H4 socket.
@Suite struct GATTServerTests {
    /// A simulator with `yaml`, a host brought up, and a link to 00:1B:DC:10:00:01; returns its handle.
    static func connected(_ yaml: String = ConnectionTests.yaml) async throws -> (SimHarness, HCISocketHost, UInt16) {
        let h = try SimHarness(yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(ConnectionTests.createConnection)
        await h.advance(seconds: 1, step: .milliseconds(100))
        let (cc, _) = try ConnectionTests.until(c) { $0.payload.first == 0x3E && $0.payload[2] == 0x01 }
        #expect(cc.payload[3] == 0x00)
        return (h, c, UInt16(cc.payload[4]) | UInt16(cc.payload[5]) << 8)
    }

    /// Sends one ATT PDU and returns the server's answer (skipping notifications and indications).
    static func request(_ c: HCISocketHost, _ handle: UInt16, _ pdu: [UInt8]) throws -> [UInt8] {
        c.send(ConnectionTests.att(handle, pdu))
        let (p, _) = try ConnectionTests.until(c) {
            guard let a = ConnectionTests.attPDU($0) else { return false }
            return a[0] != 0x1B && a[0] != 0x1D
        }
        return ConnectionTests.attPDU(p)!
    }

    /// Every ATT PDU the controller sent up to the answer of a harmless command (Read BD_ADDR):
    /// the controller answers in order, so this is "everything so far".
    static func drain(_ c: HCISocketHost) throws -> [[UInt8]] {
        var before: [H4Packet] = []
        try c.command(Bytes.readBDAddr, before: &before)
        return before.compactMap(ConnectionTests.attPDU)
    }

    @Test func batteryLevelIsIndicateOnlyAndNoSecondIndicationGoesOutBeforeTheConfirmation() async throws {
        let (h, c, handle) = try await Self.connected()
        // Read Battery Level (0x0011): 100 %.
        #expect(try Self.request(c, handle, [0x0A, 0x11, 0x00]) == [0x0B, 0x64])
        // Notifications (CCCD 0x0001) on an indicate-only characteristic: accepted, but nothing is notified.
        #expect(try Self.request(c, handle, [0x12, 0x12, 0x00, 0x01, 0x00]) == [0x13])
        await h.advance(seconds: 2)
        #expect(try Self.drain(c).allSatisfy { $0[0] != 0x1B && $0[0] != 0x1D })

        // CCCD 0x0002: indications (Vol 3, Part G, §3.3.3.3).
        #expect(try Self.request(c, handle, [0x12, 0x12, 0x00, 0x02, 0x00]) == [0x13])
        await h.advance(seconds: 4)
        // One Handle Value Indication, 0x0011 = 100, then nothing while it is unconfirmed (§3.4.7.2).
        let first = try Self.drain(c).filter { $0[0] == 0x1D }
        #expect(first == [[0x1D, 0x11, 0x00, 0x64]])
        await h.advance(seconds: 2)
        #expect(try Self.drain(c).filter { $0[0] == 0x1D }.isEmpty)
        #expect(h.simulator.nodes[0].link(handle)?.gatt.awaitingConfirmation == true)

        // Handle Value Confirmation (0x1E): the queued indication follows at once.
        c.send(ConnectionTests.att(handle, [0x1E]))
        let (next, _) = try ConnectionTests.until(c) { ConnectionTests.attPDU($0)?.first == 0x1D }
        #expect(ConnectionTests.attPDU(next) == [0x1D, 0x11, 0x00, 0x64])
        #expect(h.simulator.nodes[0].link(handle)?.gatt.confirmationsReceived == 1)
        #expect(h.simulator.nodes[0].link(handle)?.gatt.indicationsSent == 2)
    }

    @Test func alertLevelTakesWritesAndWriteCommandsChecksLengthAndRangeAndReadsBack() async throws {
        let (h, c, handle) = try await Self.connected()
        // Characteristic declaration 0x0014: read | write without response | write (0x0E), value 0x0015, UUID 0x2A06.
        #expect(
            try Self.request(c, handle, [0x08, 0x13, 0x00, 0x15, 0x00, 0x03, 0x28])
                == [0x09, 0x07, 0x14, 0x00, 0x0E, 0x15, 0x00, 0x06, 0x2A])
        // Write Request 0x02 (High Alert) → Write Response; a read returns it.
        #expect(try Self.request(c, handle, [0x12, 0x15, 0x00, 0x02]) == [0x13])
        #expect(try Self.request(c, handle, [0x0A, 0x15, 0x00]) == [0x0B, 0x02])
        // 0x03 is out of range: Value Not Allowed (0x13). Two octets: Invalid Attribute Value Length (0x0D).
        #expect(try Self.request(c, handle, [0x12, 0x15, 0x00, 0x03]) == [0x01, 0x12, 0x15, 0x00, 0x13])
        #expect(try Self.request(c, handle, [0x12, 0x15, 0x00, 0x01, 0x00]) == [0x01, 0x12, 0x15, 0x00, 0x0D])
        // Write Commands get no answer, valid or not (§3.4.5.3); the valid one takes effect.
        c.send(ConnectionTests.att(handle, [0x52, 0x15, 0x00, 0x07]))
        c.send(ConnectionTests.att(handle, [0x52, 0x15, 0x00, 0x01]))
        #expect(try Self.drain(c).isEmpty)
        #expect(try Self.request(c, handle, [0x0A, 0x15, 0x00]) == [0x0B, 0x01])
        // Read-only values refuse writes: Device Name → Write Not Permitted (0x03).
        #expect(try Self.request(c, handle, [0x12, 0x03, 0x00, 0x41]) == [0x01, 0x12, 0x03, 0x00, 0x03])
        // Service Changed is indicate-only: Read Not Permitted (0x02).
        #expect(try Self.request(c, handle, [0x0A, 0x0D, 0x00]) == [0x01, 0x0A, 0x0D, 0x00, 0x02])
        #expect(
            h.simulator.nodes[0].link(handle)?.gatt.writes == [
                .init(handle: 0x0015, value: [0x02], command: false),
                .init(handle: 0x0015, value: [0x01], command: true),
            ])
    }

    @Test func readBlobReadsTheManufacturerNamePastTheMTU() async throws {
        let (h, c, handle) = try await Self.connected()
        // The harness owns the simulator: released early, it would end the link under the test (it did once the
        // simulator's plug stopped at once instead of at its next 50 ms poll).
        defer { withExtendedLifetime(h) {} }
        // "BLEGateway Simulated Sensors Ltd" is 32 octets; at the default ATT_MTU 23 a Read returns 22.
        let name = Array("BLEGateway Simulated Sensors Ltd".utf8)
        #expect(try Self.request(c, handle, [0x0A, 0x18, 0x00]) == [0x0B] + name[0..<22])
        // Read Blob from offset 22 (0x0016) → the last 10 octets.
        #expect(try Self.request(c, handle, [0x0C, 0x18, 0x00, 0x16, 0x00]) == [0x0D] + name[22...])
        // Offset 32 = the length: an empty part. Offset 33: Invalid Offset (0x07).
        #expect(try Self.request(c, handle, [0x0C, 0x18, 0x00, 0x20, 0x00]) == [0x0D])
        #expect(try Self.request(c, handle, [0x0C, 0x18, 0x00, 0x21, 0x00]) == [0x01, 0x0C, 0x18, 0x00, 0x07])
        // Model Number 0x2A24 at 0x001A: "SIM-ENV-1".
        #expect(
            try Self.request(c, handle, [0x0A, 0x1A, 0x00])
                == [0x0B, 0x53, 0x49, 0x4D, 0x2D, 0x45, 0x4E, 0x56, 0x2D, 0x31])
        // Read By Type of the long name is cut to ATT_MTU − 4 = 19 octets (§3.4.4.2).
        #expect(
            try Self.request(c, handle, [0x08, 0x16, 0x00, 0x1A, 0x00, 0x29, 0x2A])
                == [0x09, 0x15, 0x18, 0x00] + name[0..<19])
    }

    @Test func theDatabaseGrowsAtGattChangeAndServiceChangedIsIndicated() async throws {
        let yaml = ConnectionTests.yaml.replacingOccurrences(
            of: "interval_ms: 100}", with: "interval_ms: 100, gatt_change_at_s: 4}")
        let (h, c, handle) = try await Self.connected(yaml)
        // Before the change the last service is Device Information, 0x0016–0x001A.
        #expect(
            try Self.request(c, handle, [0x10, 0x16, 0x00, 0xFF, 0xFF, 0x00, 0x28])
                == [0x11, 0x06, 0x16, 0x00, 0x1A, 0x00, 0x0A, 0x18])
        // Enable Service Changed indications (CCCD 0x000E = 0x0002).
        #expect(try Self.request(c, handle, [0x12, 0x0E, 0x00, 0x02, 0x00]) == [0x13])
        await h.advance(seconds: 4)
        // Vol 3, Part G, §7.1: the indication carries the affected range 0x001B–0x001D.
        let (ind, _) = try ConnectionTests.until(c) { ConnectionTests.attPDU($0)?.first == 0x1D }
        #expect(ConnectionTests.attPDU(ind) == [0x1D, 0x0D, 0x00, 0x1B, 0x00, 0x1D, 0x00])
        c.send(ConnectionTests.att(handle, [0x1E]))
        // The new service: Tx Power 0x1804, 0x001B–0x001D, and its Tx Power Level (0 dBm) readable.
        #expect(
            try Self.request(c, handle, [0x10, 0x16, 0x00, 0xFF, 0xFF, 0x00, 0x28])
                == [0x11, 0x06, 0x16, 0x00, 0x1A, 0x00, 0x0A, 0x18, 0x1B, 0x00, 0x1D, 0x00, 0x04, 0x18])
        #expect(try Self.request(c, handle, [0x0A, 0x1D, 0x00]) == [0x0B, 0x00])
        #expect(h.simulator.nodes[0].link(handle)?.gatt.confirmationsReceived == 1)
    }

    @Test func notifyIntervalSetsTheRateAndFloodFillsEveryConnectionEvent() async throws {
        let slow = ConnectionTests.yaml.replacingOccurrences(
            of: "interval_ms: 100}", with: "interval_ms: 100, notify_interval_ms: 200}")
        let (h, c, handle) = try await Self.connected(slow)
        #expect(try Self.request(c, handle, [0x12, 0x07, 0x00, 0x01, 0x00]) == [0x13])
        _ = try Self.drain(c)
        await h.advance(seconds: 2, step: .milliseconds(100))
        let n = try Self.drain(c).filter { $0[0] == 0x1B && $0[1] == 0x06 }.count
        #expect((9...11).contains(n), "\(n) notifications in 2 s at 200 ms")

        // flood: 4 per connection event; the interval is 0x28 × 1.25 ms = 50 ms, so 80 a second.
        let fast = ConnectionTests.yaml.replacingOccurrences(
            of: "interval_ms: 100}", with: "interval_ms: 100, flood: true}")
        let (h2, c2, handle2) = try await Self.connected(fast)
        #expect(try Self.request(c2, handle2, [0x12, 0x07, 0x00, 0x01, 0x00]) == [0x13])
        _ = try Self.drain(c2)
        let before = h2.simulator.nodes[0].stats.notificationsSent
        await h2.advance(seconds: 2, step: .milliseconds(50))
        let m = try Self.drain(c2).filter { $0[0] == 0x1B && $0[1] == 0x06 }.count
        #expect(m >= 150, "\(m) notifications in 2 s under flood")
        #expect(h2.simulator.nodes[0].stats.notificationsSent - before == m)
    }
}
