import BLETestSupport
import BLETransport
import Foundation
import Glibc
import Testing

@testable import BLESimulator

/// Literal command bytes used by the tests (H4 indicator, opcode little-endian, length, parameters).
enum Bytes {
    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    /// Set Event Mask: the default 0x00001FFFFFFFFFFF plus bit 61 LE Meta.
    static let setEventMask: [UInt8] = [0x01, 0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x00, 0x20]
    /// LE Set Event Mask: subevents 0x01–0x05 plus 0x0D (bit 12, extended advertising report).
    static let leSetEventMask: [UInt8] = [0x01, 0x01, 0x20, 0x08, 0x1F, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
    static let readBDAddr: [UInt8] = [0x01, 0x09, 0x10, 0x00]
    static let readLocalVersion: [UInt8] = [0x01, 0x01, 0x10, 0x00]
    static let readLocalCommands: [UInt8] = [0x01, 0x02, 0x10, 0x00]
    static let readLocalFeatures: [UInt8] = [0x01, 0x03, 0x10, 0x00]
    static let readBufferSize: [UInt8] = [0x01, 0x05, 0x10, 0x00]
    static let leReadBufferSize: [UInt8] = [0x01, 0x02, 0x20, 0x00]
    static let leReadLocalFeatures: [UInt8] = [0x01, 0x03, 0x20, 0x00]

    /// LE Set Scan Parameters: type, interval, window (0.625 ms units), own address public, accept all.
    static func leSetScanParameters(active: Bool, interval: UInt16, window: UInt16) -> [UInt8] {
        [
            0x01, 0x0B, 0x20, 0x07, active ? 1 : 0, UInt8(interval & 0xFF), UInt8(interval >> 8),
            UInt8(window & 0xFF), UInt8(window >> 8), 0x00, 0x00,
        ]
    }
    static func leSetScanEnable(_ on: Bool, filterDuplicates: Bool = false) -> [UInt8] {
        [0x01, 0x0C, 0x20, 0x02, on ? 1 : 0, filterDuplicates ? 1 : 0]
    }
    /// LE Set Extended Scan Parameters on LE 1M only.
    static func leSetExtendedScanParameters(active: Bool, interval: UInt16, window: UInt16) -> [UInt8] {
        [
            0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, active ? 1 : 0, UInt8(interval & 0xFF), UInt8(interval >> 8),
            UInt8(window & 0xFF), UInt8(window >> 8),
        ]
    }
    static func leSetExtendedScanEnable(_ on: Bool, filterDuplicates: UInt8 = 0) -> [UInt8] {
        [0x01, 0x42, 0x20, 0x06, on ? 1 : 0, filterDuplicates, 0x00, 0x00, 0x00, 0x00]
    }
}

/// A running simulator on a manual clock, for one test.
final class SimHarness {
    let clock = ManualClock()
    let simulator: Simulator
    let task: Task<Void, any Error>
    let directory: String

    init(_ yaml: String, seed: UInt64 = 7) throws {
        let scenario = try ScenarioLoader.parse(yaml)
        directory = NSTemporaryDirectory() + "blesim-\(UUID().uuidString.prefix(8))"
        var options = SimulatorOptions(socketDirectory: directory)
        options.seed = seed
        simulator = try Simulator(scenario: scenario, options: options, clock: clock, pacing: .clock(batch: .zero))
        let sim = simulator
        task = Task { try await sim.run() }
    }

    deinit {
        task.cancel()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func client(_ gateway: String) throws -> HCISocketHost {
        // The socket is bound in Simulator.init; the accept thread starts with run().
        try HCISocketHost(path: simulator.socketPath(for: gateway))
    }

    /// Runs virtual time forward in steps, letting the radio catch up after each.
    func advance(seconds: Int, step: Duration = .seconds(1)) async {
        await settle()
        var left = Duration.seconds(seconds)
        while left > .zero {
            clock.advance(by: step)
            left -= step
            await settle()
        }
    }

    /// Waits until the radio is asleep on the clock again.
    func settle() async {
        await clock.untilSleeping()
    }

    /// Bring-up as a host does it, checking each Command Complete is a success.
    func bringUp(_ c: HCISocketHost, leMeta: Bool = true) throws {
        for cmd in [Bytes.reset, Bytes.readLocalVersion, Bytes.readBDAddr]
            + (leMeta ? [Bytes.setEventMask, Bytes.leSetEventMask] : [])
        {
            let r = try c.command(cmd)
            #expect(r[1] == 0x0E && r[6] == 0x00, "command \(cmd) → \(r)")
        }
    }
}
