import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// Literal byte exchanges with a virtual controller over its Unix socket (Core v5.4, Vol 4, Part E).
@Suite struct ControllerCommandTests {
    static let twoGateways = """
        name: two
        gateways:
          - {id: gw-a, position: [0, 0]}
          - {id: gw-b, position: [10, 0]}
        """

    @Test func resetIsAnsweredWithCommandCompleteSuccessAndOneCommandCredit() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        // HCI_Command_Complete: 0x0E, length 4, Num_HCI_Command_Packets 1, opcode 0x0C03, status 0.
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func readBDAddrGivesEachGatewayItsOwnAddress() throws {
        let h = try SimHarness(Self.twoGateways)
        let a = try h.client("gw-a").command(Bytes.readBDAddr)
        let b = try h.client("gw-b").command(Bytes.readBDAddr)
        #expect(a.count == 13 && Array(a[0..<7]) == [0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00])
        #expect(b.count == 13 && Array(b[0..<7]) == [0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00])
        #expect(a[7...] != b[7...])
    }

    @Test func bringUpInformationalCommandsReturnTheirDocumentedLayouts() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        // Read Local Version: status, HCI 5.4 (0x0D), revision, LMP 5.4, company 0x05F1, subversion.
        #expect(
            try c.command(Bytes.readLocalVersion)
                == [0x04, 0x0E, 0x0C, 0x01, 0x01, 0x10, 0x00, 0x0D, 0x00, 0x00, 0x0D, 0xF1, 0x05, 0x00, 0x00])
        // Read Local Supported Features: LE Supported (Controller) and BR/EDR Not Supported, octet 4.
        #expect(
            try c.command(Bytes.readLocalFeatures)
                == [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x10, 0x00, 0, 0, 0, 0, 0x60, 0, 0, 0])
        // LE Read Local Supported Features: bit 12 LE Extended Advertising.
        #expect(
            try c.command(Bytes.leReadLocalFeatures)
                == [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x20, 0x00, 0x00, 0x10, 0, 0, 0, 0, 0, 0])
        #expect(
            try c.command(Bytes.readBufferSize)
                == [0x04, 0x0E, 0x0B, 0x01, 0x05, 0x10, 0x00, 0xFD, 0x03, 0x00, 0x08, 0x00, 0x00, 0x00])
        #expect(try c.command(Bytes.leReadBufferSize) == [0x04, 0x0E, 0x07, 0x01, 0x02, 0x20, 0x00, 0xFB, 0x00, 0x08])
        #expect(try c.command(Bytes.setEventMask) == [0x04, 0x0E, 0x04, 0x01, 0x01, 0x0C, 0x00])
        #expect(
            try c.command([0x01, 0x63, 0x0C, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]) == [
                0x04, 0x0E, 0x04, 0x01, 0x63, 0x0C, 0x00,
            ])
        // LE Read Buffer Size [v2]: 251 × 8 ACL, no ISO.
        #expect(
            try c.command([0x01, 0x60, 0x20, 0x00])
                == [0x04, 0x0E, 0x0A, 0x01, 0x60, 0x20, 0x00, 0xFB, 0x00, 0x08, 0x00, 0x00, 0x00])
        // LE Read Maximum Data Length: 251 octets / 2120 µs each way.
        #expect(
            try c.command([0x01, 0x2F, 0x20, 0x00])
                == [0x04, 0x0E, 0x0C, 0x01, 0x2F, 0x20, 0x00, 0xFB, 0x00, 0x48, 0x08, 0xFB, 0x00, 0x48, 0x08])
        #expect(try c.command(Bytes.leSetEventMask) == [0x04, 0x0E, 0x04, 0x01, 0x01, 0x20, 0x00])
    }

    @Test func supportedCommandsBitmapClaimsExactlyTheImplementedScanCommands() throws {
        let h = try SimHarness(Self.twoGateways)
        let r = try h.client("gw-a").command(Bytes.readLocalCommands)
        #expect(r.count == 3 + 4 + 64)
        let bits = Array(r[7...])
        // §6.27: octet 26 bits 2–3 LE Set Scan Parameters/Enable; octet 37 bits 5–6 the extended ones.
        #expect(bits[26] & 0x0C == 0x0C)
        #expect(bits[37] & 0x60 == 0x60)
        // Octet 26 bits 4–5 LE Create Connection/Cancel; octet 0 bit 5 Disconnect; octet 15 bit 5 Read RSSI.
        #expect(bits[26] & 0x30 == 0x30 && bits[0] & 0x20 != 0 && bits[15] & 0x20 != 0)
        // The peripheral's side: octet 25 bits 5 and 7 LE Set Advertising Parameters/Data, octet 26 bits 0–1 Scan
        // Response Data and Advertising Enable, octet 28 bits 1–2 the LTK Request Reply and Negative Reply.
        #expect(bits[25] & 0xA0 == 0xA0 && bits[26] & 0x03 == 0x03 && bits[28] & 0x06 == 0x06)
        // LE Read Advertising Physical Channel Tx Power (octet 25 bit 6) is not implemented, so not claimed.
        #expect(bits[25] & 0x40 == 0)
    }

    @Test func advertisingIsSetUpEnabledAndRefusedWhereTheSpecificationSays() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        // LE Set Advertising Parameters (0x2006): 100 ms, ADV_IND, public, all channels → Command Complete, success.
        let parameters: [UInt8] =
            [0x01, 0x06, 0x20, 0x0F, 0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 6) + [
                0x07, 0x00,
            ]
        #expect(try c.command(parameters) == [0x04, 0x0E, 0x04, 0x01, 0x06, 0x20, 0x00])
        // LE Set Advertising Enable (0x200A) on, then the parameters again: 0x0C Command Disallowed while enabled.
        #expect(try c.command([0x01, 0x0A, 0x20, 0x01, 0x01]) == [0x04, 0x0E, 0x04, 0x01, 0x0A, 0x20, 0x00])
        #expect(try c.command(parameters) == [0x04, 0x0E, 0x04, 0x01, 0x06, 0x20, 0x0C])
        // LE Long Term Key Request Negative Reply (0x201B) for a handle with no link: 0x02 Unknown Connection
        // Identifier, the handle echoed.
        #expect(
            try c.command([0x01, 0x1B, 0x20, 0x02, 0x40, 0x00]) == [
                0x04, 0x0E, 0x06, 0x01, 0x1B, 0x20, 0x02, 0x40, 0x00,
            ])
    }

    @Test func extendedAdvertisingRunsOneSetBesideExtendedScanningAndRefusesTheLegacyCommands() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        // LE Set Extended Scan Parameters (0x2041), then Enable (0x2042): scanning with the extended commands.
        #expect(try c.command([0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x10, 0x00]).last == 0x00)
        #expect(try c.command([0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]).last == 0x00)
        // LE Set Extended Advertising Enable (0x2039) before the set exists: 0x42 Unknown Advertising Identifier.
        let enable: [UInt8] = [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00]
        #expect(try c.command(enable) == [0x04, 0x0E, 0x04, 0x01, 0x39, 0x20, 0x42])
        // LE Set Extended Advertising Parameters (0x2036): set 0, ADV_IND with legacy PDUs (0x0013), 100 ms, all
        // channels, public → success and Selected_TX_Power 0 dBm.
        let parameters: [UInt8] =
            [0x01, 0x36, 0x20, 0x19, 0x00, 0x13, 0x00, 0xA0, 0x00, 0x00, 0xA0, 0x00, 0x00, 0x07, 0x00, 0x00]
            + [UInt8](repeating: 0, count: 6) + [0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00]
        #expect(try c.command(parameters) == [0x04, 0x0E, 0x05, 0x01, 0x36, 0x20, 0x00, 0x00])
        // A second set does not fit: 0x07 Memory Capacity Exceeded.
        var second = parameters
        second[4] = 0x01
        #expect(try c.command(second) == [0x04, 0x0E, 0x04, 0x01, 0x36, 0x20, 0x07])
        // LE Set Extended Advertising Data (0x2037): 32 octets is too long for legacy PDUs (0x12); 3 octets fit.
        let long: [UInt8] = [0x01, 0x37, 0x20, 0x24, 0x00, 0x03, 0x01, 0x20] + [UInt8](repeating: 0xAA, count: 32)
        #expect(try c.command(long) == [0x04, 0x0E, 0x04, 0x01, 0x37, 0x20, 0x12])
        let data: [UInt8] = [0x01, 0x37, 0x20, 0x07, 0x00, 0x03, 0x01, 0x03, 0x02, 0x01, 0x06]
        #expect(try c.command(data) == [0x04, 0x0E, 0x04, 0x01, 0x37, 0x20, 0x00])
        // Enabled; then the parameters again: 0x0C Command Disallowed while the set advertises.
        #expect(try c.command(enable) == [0x04, 0x0E, 0x04, 0x01, 0x39, 0x20, 0x00])
        #expect(h.simulator.nodes[0].advertising.connectable)
        #expect(h.simulator.nodes[0].advertising.data == [0x02, 0x01, 0x06])
        #expect(try c.command(parameters) == [0x04, 0x0E, 0x04, 0x01, 0x36, 0x20, 0x0C])
        // The legacy LE Set Advertising Enable (0x200A) after extended commands: 0x0C Command Disallowed (§3.1.1).
        #expect(try c.command([0x01, 0x0A, 0x20, 0x01, 0x00]) == [0x04, 0x0E, 0x04, 0x01, 0x0A, 0x20, 0x0C])
        // Disabled with Num_Sets 0: every set.
        #expect(try c.command([0x01, 0x39, 0x20, 0x02, 0x00, 0x00]) == [0x04, 0x0E, 0x04, 0x01, 0x39, 0x20, 0x00])
        #expect(!h.simulator.nodes[0].advertising.enabled)
    }

    @Test func unknownOpcodeGetsCommandStatusUnknownHCICommand() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        // Opcode 0x1234 (OGF 0x04, OCF 0x234) does not exist: Command Status, status 0x01.
        #expect(try c.command([0x01, 0x34, 0x12, 0x00]) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0x34, 0x12])
        #expect(h.simulator.nodes[0].stats.unknownCommands == 1)
    }

    @Test func shortParametersGetInvalidHCICommandParameters() throws {
        let h = try SimHarness(Self.twoGateways)
        // LE Set Scan Enable with one parameter byte instead of two.
        #expect(
            try h.client("gw-a").command([0x01, 0x0C, 0x20, 0x01, 0x01]) == [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x12])
    }

    @Test func garbageFromTheHostIsCountedAndTheControllerKeepsServing() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        c.send([0xFF, 0xFF, 0x00, 0x13, 0x37])
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        #expect(h.simulator.nodes[0].stats.malformedBytes == 5)
        #expect(try c.command(Bytes.readBDAddr).count == 13)
    }

    @Test func legacyAndExtendedScanCommandsCannotBeMixedUntilReset() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        #expect(try c.command(Bytes.leSetScanParameters(active: false, interval: 16, window: 16)).last == 0x00)
        // Vol 4, Part E, §3.1.1: Command Disallowed (0x0C).
        #expect(try c.command(Bytes.leSetExtendedScanParameters(active: false, interval: 16, window: 16)).last == 0x0C)
        try c.command(Bytes.reset)
        #expect(try c.command(Bytes.leSetExtendedScanParameters(active: false, interval: 16, window: 16)).last == 0x00)
    }

    @Test func scanParametersAreRefusedWhileScanning() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        try c.command(Bytes.leSetScanEnable(true))
        #expect(try c.command(Bytes.leSetScanParameters(active: true, interval: 16, window: 16)).last == 0x0C)
        // Window larger than interval is invalid.
        try c.command(Bytes.leSetScanEnable(false))
        #expect(try c.command(Bytes.leSetScanParameters(active: true, interval: 16, window: 32)).last == 0x12)
    }

    @Test func aReconnectingHostFindsAFreshController() throws {
        let h = try SimHarness(Self.twoGateways)
        do {
            let c = try h.client("gw-a")
            try c.command(Bytes.leSetScanEnable(true))
        }
        let c2 = try h.client("gw-a")
        // Parameters are accepted again: scanning was not left enabled by the previous host.
        #expect(try c2.command(Bytes.leSetScanParameters(active: false, interval: 16, window: 16)).last == 0x00)
        #expect(h.simulator.nodes[0].stats.connectionsAccepted == 2)
    }

    @Test func commandsArrivingOneByteAtATimeAreReassembled() throws {
        let h = try SimHarness(Self.twoGateways)
        let c = try h.client("gw-a")
        for b in Bytes.readBDAddr + Bytes.reset {
            c.send([b])
            usleep(1000)  // give each byte its own read(2) on the simulator's side, most of the time
        }
        #expect(try c.receive().h4Bytes.count == 13)
        #expect(try c.receive().h4Bytes == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }
}
