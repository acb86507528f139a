import BLEHCI
import BLETestSupport
import BLETransport
import Testing

@testable import BLEHost

/// Literal exchanges of the bring-up sequence (Core v5.4, Vol 4, Part E, §7.3–§7.8).
func bringUpScript(extended: Bool) -> [ScriptedHCITransport.Exchange] {
    [
        .init([0x01, 0x03, 0x0C, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]]),
        .init(
            [0x01, 0x01, 0x10, 0x00],
            [[0x04, 0x0E, 0x0C, 0x01, 0x01, 0x10, 0x00, 0x0D, 0x34, 0x12, 0x0D, 0x5D, 0x00, 0x78, 0x56]]),
        .init(
            [0x01, 0x02, 0x10, 0x00],
            [[0x04, 0x0E, 0x44, 0x01, 0x02, 0x10, 0x00] + [UInt8](repeating: 0, count: 64)]),
        .init(
            [0x01, 0x03, 0x10, 0x00],
            [[0x04, 0x0E, 0x0C, 0x01, 0x03, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00]]),
        .init(
            [0x01, 0x03, 0x20, 0x00],
            [[0x04, 0x0E, 0x0C, 0x01, 0x03, 0x20, 0x00, 0x01, extended ? 0x10 : 0x00, 0, 0, 0, 0, 0, 0]]),
        .init(
            [0x01, 0x09, 0x10, 0x00],
            [[0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00, 0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00]]),
        .init(
            [0x01, 0x05, 0x10, 0x00],
            [[0x04, 0x0E, 0x0B, 0x01, 0x05, 0x10, 0x00, 0xFD, 0x03, 0x00, 0x08, 0x00, 0x00, 0x00]]),
        .init([0x01, 0x02, 0x20, 0x00], [[0x04, 0x0E, 0x07, 0x01, 0x02, 0x20, 0x00, 0xFB, 0x00, 0x0F]]),
        .init(
            [0x01, 0x01, 0x0C, 0x08, 0x90, 0x88, 0x00, 0x02, 0x00, 0x80, 0x00, 0x20],
            [[0x04, 0x0E, 0x04, 0x01, 0x01, 0x0C, 0x00]]),
        // LE Set Event Mask: 0x7F = subevents 0x01–0x07 (0x05 LE Long Term Key Request among them, always answered).
        .init(
            [0x01, 0x01, 0x20, 0x08, 0x7F, 0x1E, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00],
            [[0x04, 0x0E, 0x04, 0x01, 0x01, 0x20, 0x00]]),
    ]
}

// Legacy scanning, passive, 100 ms interval and window (0x00A0), duplicates not filtered.
let legacyEnable: [ScriptedHCITransport.Exchange] = [
    .init(
        [0x01, 0x0B, 0x20, 0x07, 0x00, 0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00],
        [[0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00]]),
    .init([0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]]),
]
let legacyDisable = ScriptedHCITransport.Exchange(
    [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]])

// Extended scanning on LE 1M, passive, 0x00A0 / 0x00A0, then enable with duplicates off, no duration or period.
let extendedEnable: [ScriptedHCITransport.Exchange] = [
    .init(
        [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0xA0, 0x00, 0xA0, 0x00],
        [[0x04, 0x0E, 0x04, 0x01, 0x41, 0x20, 0x00]]),
    .init([0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x42, 0x20, 0x00]]),
]
let extendedDisable = ScriptedHCITransport.Exchange(
    [0x01, 0x42, 0x20, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x42, 0x20, 0x00]])

/// An LE Extended Advertising Report event from random C0:11:22:33:44:55, SID 1, with the given data status.
func extendedReportEvent(dataStatus: UInt16, data: [UInt8]) -> [UInt8] {
    var p: [UInt8] = [
        0x0D, 0x01, UInt8(dataStatus << 5), 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0,
        0x01, 0x02, 0x01, 0x7F, 0xBA, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0,
    ]
    p.append(UInt8(data.count))
    p += data
    return [0x04, 0x3E, UInt8(p.count)] + p
}

@Suite struct ScannerTests {
    @Test func bringUpReadsTheControllerAndUnmasksTheEventsTheGatewayNeeds() async throws {
        let t = ScriptedHCITransport(script: bringUpScript(extended: false))
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let info = try await ControllerBringUp.run(controller)
        #expect(t.mismatches.isEmpty)
        #expect(info.address == BDAddress("00:1A:7D:DA:71:13"))
        #expect(info.version.hciVersion == 0x0D)
        #expect(info.lmpFeatures.leSupported)
        #expect(!info.supportsExtendedAdvertising)
        #expect(info.leACLBuffers.length == 251 && info.leACLBuffers.count == 15)
        runner.cancel()
        try? await runner.value
    }

    @Test func legacyControllerIsScannedWithLegacyCommandsAndReportsArrive() async throws {
        let t = ScriptedHCITransport(script: bringUpScript(extended: false) + legacyEnable + [legacyDisable])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let info = try await ControllerBringUp.run(controller)
        let scanner = Scanner(controller: controller, mode: .control(info))
        let scanning = Task { try await scanner.run() }
        #expect(await eventually { scanner.statistics.enables == 1 })
        // ADV_NONCONN_IND with Flags, RSSI -60; then one whose data runs past the event.
        t.inject([
            0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x03,
            0x02, 0x01, 0x06, 0xC4,
        ])
        t.inject([
            0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x10,
            0x02, 0x01, 0x06, 0xC4,
        ])
        var iterator = scanner.reports.makeAsyncIterator()
        let report = try await iterator.next()
        #expect(report?.address == BDAddress("C0:11:22:33:44:55"))
        #expect(report?.rssi == -60)
        #expect(report?.data == [0x02, 0x01, 0x06])
        #expect(report?.isExtended == false)
        #expect(await eventually { scanner.statistics.assembler.malformedAdvertisingEvents == 1 })
        scanning.cancel()
        try await scanning.value
        #expect(t.remaining == 0)
        #expect(t.mismatches.isEmpty)
        runner.cancel()
        try? await runner.value
    }

    @Test func extendedControllerIsScannedWithExtendedCommandsAndFragmentsAreJoined() async throws {
        let t = ScriptedHCITransport(script: bringUpScript(extended: true) + extendedEnable + [extendedDisable])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let info = try await ControllerBringUp.run(controller)
        #expect(info.supportsExtendedAdvertising)
        let scanner = Scanner(controller: controller, mode: .control(info))
        let scanning = Task { try await scanner.run() }
        #expect(await eventually { scanner.statistics.enables == 1 })
        t.inject(extendedReportEvent(dataStatus: 1, data: [0x05, 0xFF, 0x4C, 0x00]))
        t.inject(extendedReportEvent(dataStatus: 0, data: [0x02, 0x15]))
        var iterator = scanner.reports.makeAsyncIterator()
        let report = try await iterator.next()
        #expect(report?.data == [0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15])
        #expect(report?.isExtended == true)
        #expect(report?.rssi == -70)
        #expect(report?.advertisingSID == 1)
        scanning.cancel()
        try await scanning.value
        #expect(t.remaining == 0)
        #expect(t.mismatches.isEmpty)
        runner.cancel()
        try? await runner.value
    }

    @Test func failingEnableThrowsTheCommandAndStatus() async throws {
        let t = ScriptedHCITransport(
            script: bringUpScript(extended: false) + [
                legacyEnable[0],
                .init([0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x0C]]),
            ])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let info = try await ControllerBringUp.run(controller)
        let scanner = Scanner(controller: controller, mode: .control(info))
        do {
            try await scanner.run()
            Issue.record("did not throw")
        } catch let e as HCIError {
            #expect("\(e)" == "LE Set Scan Enable (0x200C) failed: HCI status 0x0C Command Disallowed")
        }
        runner.cancel()
        try? await runner.value
    }

    @Test func observerSendsNothingAndStillDeliversReports() async throws {
        let t = ScriptedHCITransport(script: [], sendSupported: false)
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let scanner = Scanner(controller: controller, mode: .observer)
        let scanning = Task { try await scanner.run() }
        // Subscribed when it was made: nothing to wait for before injecting.
        t.inject([
            0x04, 0x3E, 0x0F, 0x02, 0x01, 0x00, 0x00, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x03,
            0x02, 0x01, 0x06, 0x7F,
        ])
        t.end()
        var got: [ScanReport] = []
        for try await r in scanner.reports { got.append(r) }
        #expect(got.count == 1)
        #expect(got.first?.rssi == nil)
        #expect(got.first?.isConnectable == true)
        #expect(t.sent.isEmpty)
        try await scanning.value
        try await runner.value
    }
}
