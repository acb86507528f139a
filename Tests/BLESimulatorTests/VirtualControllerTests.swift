import BLEHCI
import BLETransport
import Testing

@testable import BLESimulator

/// The controller state machine on its own: command payloads in, event bytes out, no sockets.
@Suite struct VirtualControllerTests {
    static func controller() -> VirtualController { VirtualController(address: BDAddress("00:1B:DC:F0:00:01")!) }

    @Test func legacyScanParametersAndEnableSetTheScanState() {
        var c = Self.controller()
        // Active, interval 0x0040 (40 ms), window 0x0020 (20 ms).
        #expect(
            c.handle(command: [0x0B, 0x20, 0x07, 0x01, 0x40, 0x00, 0x20, 0x00, 0x00, 0x00], now: .zero)
                == [[0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00]])
        _ = c.handle(command: [0x0C, 0x20, 0x02, 0x01, 0x01], now: .seconds(5))
        #expect(c.scan.enabled && c.scan.active && c.scan.filterDuplicates == 1 && !c.scan.extendedReports)
        #expect(c.scan.interval == .milliseconds(40) && c.scan.window == .milliseconds(20))
        #expect(c.scan.startedAt == .seconds(5) && c.scan.generation == 1)
        // Re-enabling while enabled keeps the scan (and its duplicate filter) going.
        _ = c.handle(command: [0x0C, 0x20, 0x02, 0x01, 0x00], now: .seconds(6))
        #expect(c.scan.generation == 1 && c.scan.startedAt == .seconds(5) && c.scan.filterDuplicates == 0)
    }

    @Test func scanWindowsOpenAtTheStartOfEachInterval() {
        var s = ScanState()
        s.enabled = true
        s.interval = .milliseconds(100)
        s.window = .milliseconds(30)
        s.startedAt = .seconds(1)
        #expect(RadioEngine.hears(s, at: 1.010))
        #expect(!RadioEngine.hears(s, at: 1.050))
        #expect(RadioEngine.hears(s, at: 1.120))
        #expect(!RadioEngine.hears(s, at: 0.990))  // before scanning started
    }

    @Test func reportsNeedBothTheEventMaskAndTheLEEventMask() {
        var c = Self.controller()
        #expect(!c.allowsLEMeta(subevent: 0x02))  // default Set_Event_Mask lacks bit 61
        _ = c.handle(command: [0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x00, 0x20], now: .zero)
        #expect(c.allowsLEMeta(subevent: 0x02))  // default LE mask has 0x02 …
        #expect(!c.allowsLEMeta(subevent: 0x0D))  // … but not the extended report
        _ = c.handle(command: [0x01, 0x20, 0x08, 0x1F, 0x10, 0, 0, 0, 0, 0, 0], now: .zero)
        #expect(c.allowsLEMeta(subevent: 0x0D))
    }

    @Test func resetReturnsToPowerOnDefaults() {
        var c = Self.controller()
        _ = c.handle(command: [0x0C, 0x20, 0x02, 0x01, 0x00], now: .zero)
        _ = c.handle(command: [0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], now: .zero)
        #expect(c.handle(command: [0x03, 0x0C, 0x00], now: .zero) == [[0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]])
        #expect(!c.scan.enabled && c.eventMask == 0x0000_1FFF_FFFF_FFFF && c.leEventMask == 0x1F)
    }

    @Test func extendedScanEnableChecksDuplicateFilterAndPeriodRules() {
        var c = Self.controller()
        // Filter_Duplicates 2 without a Period is invalid.
        #expect(
            c.handle(command: [0x42, 0x20, 0x06, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00], now: .zero).first?.last == 0x12)
        // Duration 1.28 s (128) not shorter than Period 1.28 s (1) is invalid.
        #expect(
            c.handle(command: [0x42, 0x20, 0x06, 0x01, 0x02, 0x80, 0x00, 0x01, 0x00], now: .zero).first?.last == 0x12)
        // Duration 500 ms within Period 1.28 s: accepted.
        #expect(
            c.handle(command: [0x42, 0x20, 0x06, 0x01, 0x02, 0x32, 0x00, 0x01, 0x00], now: .zero).first?.last == 0x00)
        #expect(c.scan.extendedReports && c.scan.duration == .milliseconds(500) && c.scan.period == .milliseconds(1280))
    }
}
