import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// The controller's own faults, `command_errors` and `le_unsupported`: literal commands in, literal events out.
@Suite struct ControllerFaultTests {
    static func yaml(_ fault: String) -> String {
        """
        name: controller-faults
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        beacons:
          - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1, position: [2, 0]}
        faults:
          - \(fault)
        """
    }

    /// LE Create Connection (§7.8.12) to 00:1B:DC:10:00:01, public; interval 30–50 ms, timeout 2 s.
    static let leCreateConnection: [UInt8] = [
        0x01, 0x0D, 0x20, 0x19, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x00,
        0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]
    /// Write LE Host Support (§7.3.79): LE_Supported_Host 1, Unused 0.
    static let writeLEHostSupport: [UInt8] = [0x01, 0x6D, 0x0C, 0x02, 0x01, 0x00]

    @Test func commandErrorsRefuseEveryCommandWithHardwareFailureInItsOwnAnswerEventUntilTheFaultEnds() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 2, gateway: gw-a, type: command_errors, duration_s: 3}"))
        let c = try h.client("gw-a")
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        await h.advance(seconds: 2)
        // Commands that end in Command Complete: Complete with Status 0x03 Hardware Failure and no more.
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x03])
        #expect(try c.command(Bytes.readLocalVersion) == [0x04, 0x0E, 0x04, 0x01, 0x01, 0x10, 0x03])
        #expect(try c.command(Bytes.leReadLocalFeatures) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x20, 0x03])
        #expect(try c.command(Bytes.leSetScanEnable(true)) == [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x03])
        // One that ends in Command Status (its outcome would follow in an event of its own): Status 0x03.
        #expect(try c.command(Self.leCreateConnection) == [0x04, 0x0F, 0x04, 0x03, 0x01, 0x0D, 0x20])
        // An opcode the controller never had (vendor-specific, OGF 0x3F) stays Unknown HCI Command.
        #expect(try c.command([0x01, 0xFF, 0xFC, 0x00]) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0xFF, 0xFC])
        #expect(h.simulator.nodes[0].stats.commandsRefused == 5)
        await h.advance(seconds: 3)
        // The fault is over and nothing refused was done: scanning was never enabled, so new scan parameters are
        // taken (while scanning they would be Command Disallowed, §7.8.10).
        #expect(
            try c.command(Bytes.leSetScanParameters(active: false, interval: 0x10, window: 0x10))
                == [0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00])
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func commandErrorsUseTheConfiguredStatusAndOutliveResetAndANewHost() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 1, gateway: gw-a, type: command_errors, status: 0x0C}"))
        await h.advance(seconds: 1)
        let first = try h.client("gw-a")
        #expect(try first.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x0C])
        // A host that reconnects (a power cycle from the gateway's side) meets the same controller.
        let again = try h.client("gw-a")
        #expect(try again.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x0C])
        #expect(try again.command(Self.leCreateConnection) == [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20])
    }

    @Test func leUnsupportedIsABREDROnlyControllerThatKnowsNoLECommand() async throws {
        let h = try SimHarness(Self.yaml("{at_s: 1, gateway: gw-a, type: le_unsupported, duration_s: 4}"))
        await h.advance(seconds: 1)
        let c = try h.client("gw-a")
        // The controller group works.
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        // LMP_Features: octet 4 has neither bit 37 "BR/EDR Not Supported" nor bit 38 "LE Supported (Controller)".
        #expect(
            try c.command(Bytes.readLocalFeatures)
                == [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        // Supported_Commands: only the BR/EDR and controller-group commands the simulator implements — Disconnect
        // (octet 0 bit 5), Read Remote Version Information (2/7), Set Event Mask and Reset (5/6, 5/7), the four
        // informational reads (14/3, 14/4, 14/5, 14/7), Read BD_ADDR and Read RSSI (15/1, 15/5), Set Event Mask
        // Page 2 (22/2); no Write LE Host Support (24/6), nothing in the LE octets 25 and beyond.
        var commands = [UInt8](repeating: 0, count: 64)
        commands[0] = 0x20
        commands[2] = 0x80
        commands[5] = 0xC0
        commands[14] = 0xB8
        commands[15] = 0x22
        commands[22] = 0x04
        #expect(try c.command(Bytes.readLocalCommands) == [0x04, 0x0E, 0x44, 0x01, 0x02, 0x10, 0x00] + commands)
        // Every LE command, and Write LE Host Support, is Unknown HCI Command (0x01), in Command Status.
        #expect(try c.command(Bytes.leReadLocalFeatures) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0x03, 0x20])
        #expect(try c.command(Bytes.leReadBufferSize) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0x02, 0x20])
        #expect(try c.command(Bytes.leSetScanEnable(true)) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0x0C, 0x20])
        #expect(try c.command(Self.writeLEHostSupport) == [0x04, 0x0F, 0x04, 0x01, 0x01, 0x6D, 0x0C])
        #expect(h.simulator.nodes[0].stats.commandsRefused == 4)
        await h.advance(seconds: 4)
        // An LE controller again: LE_Features bit 12 (LE Extended Advertising), LE bits in LMP_Features.
        #expect(
            try c.command(Bytes.leReadLocalFeatures)
                == [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x20, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(
            try c.command(Bytes.readLocalFeatures)
                == [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00])
    }

    /// Each table entry's declared answer is the event its handler sends (here, to a command with no parameters,
    /// which every handler answers, refusing those that need some): so a refusal under `command_errors` comes in
    /// the event a host waits for.
    @Test func everyCommandIsRefusedInTheEventItsHandlerAnswersWith() {
        for (opcode, entry) in SimCommandTable.entries {
            var controller = VirtualController(address: BDAddress(rawValue: 0x0000_5E00_0001))
            let packet = [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), 0]
            let answered = controller.handle(command: packet, now: .zero).first?[1]
            controller.faults.commandErrors = .hardwareFailure
            let refused = controller.handle(command: packet, now: .zero)
            let expected: UInt8 = entry.answer == .commandStatus ? 0x0F : 0x0E
            #expect(answered == expected, "\(entry.name) answered with event \(answered.map { "\($0)" } ?? "none")")
            // The status: Command Status's first parameter, Command Complete's first return parameter.
            let status = refused.first.map { $0[expected == 0x0F ? 3 : 6] }
            #expect(
                refused.count == 1 && refused.first?[1] == expected && status == 0x03,
                "\(entry.name) refused with \(refused)")
        }
    }

    /// A refused command changes nothing: the controller's state is what it was.
    @Test func aRefusedScanEnableLeavesScanningOff() {
        var controller = VirtualController(address: BDAddress(rawValue: 0x0000_5E00_0001))
        controller.faults.commandErrors = .hardwareFailure
        let events = controller.handle(command: [0x0C, 0x20, 0x02, 0x01, 0x00], now: .zero)
        #expect(events == [[0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x03]])
        #expect(!controller.scan.enabled)
        #expect(controller.commandsRefused == 1)
        controller.reset()
        #expect(controller.faults.commandErrors == .hardwareFailure, "the chip's fault survives HCI_Reset")
    }

    @Test func theStatusKeyIsForCommandErrorsOnlyAndNeverSuccess() throws {
        let ok = try ScenarioLoader.parse(Self.yaml("{at_s: 1, gateway: gw-a, type: command_errors}"))
        #expect(ok.faults.first?.status == 0x03)
        #expect(throws: ScenarioError.self) {
            try ScenarioLoader.parse(Self.yaml("{at_s: 1, gateway: gw-a, type: silence, status: 0x03}"))
        }
        #expect(throws: ScenarioError.self) {
            try ScenarioLoader.parse(Self.yaml("{at_s: 1, gateway: gw-a, type: command_errors, status: 0}"))
        }
    }
}
