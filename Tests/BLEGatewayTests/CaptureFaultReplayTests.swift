import BLEConfiguration
import BLEDomain
import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEGateway

/// A capture is a recording: the host that recorded it answered its controller's faults then. Replayed, a recorded
/// Hardware Error is history, not a fault of ours: the replay goes on to the file's end, once.
struct CaptureFaultReplayTests {
    // An LE Advertising Report (Core v5.4, Vol 4, Part E, §7.7.65.2) from 01:02:03:04:05:0N, empty data, RSSI −60.
    static func report(_ n: UInt8) -> H4Packet {
        H4Packet(
            type: .event, payload: [0x3E, 0x0C, 0x02, 0x01, 0x03, 0x00, n, 0x02, 0x03, 0x04, 0x05, 0x06, 0x00, 0xC4])
    }
    // HCI_Hardware_Error (event code 0x10, §7.7.16): one parameter, the hardware code.
    static let hardwareError = H4Packet(type: .event, payload: [0x10, 0x01, 0x42])

    @Test func aRecordedHardwareErrorIsReplayedOnceToTheEndOfTheCapture() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hw-error-\(UUID()).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file =
            Btsnoop.header() + Btsnoop.record(Self.report(1), direction: .received, unixMicroseconds: 0)
            + Btsnoop.record(Self.hardwareError, direction: .received, unixMicroseconds: 10)
            + Btsnoop.record(Self.report(2), direction: .received, unixMicroseconds: 20)
        try Data(file).write(to: URL(fileURLWithPath: path))
        let source = HCISightingSource(
            spec: .file(path: path), mode: .exclusive, scan: GatewayConfiguration.Scan(), clock: ManualClock(),
            logger: Logger(label: "capture-fault"))
        let seen = Locked<[BDAddress]>([])
        let states = Locked<[AdapterReport.State]>([])
        var ending: HCISightingSource.SourceStopped?
        do {
            try await source.run(
                adapter: { r in states.withLock { $0.append(r.state) } },
                sighting: { s in seen.withLock { $0.append(s.address) } })
        } catch let stop as HCISightingSource.SourceStopped {
            ending = stop
        }
        #expect(ending?.kind == .endOfCapture, "\(String(describing: ending))")
        #expect(seen.withLock { $0.count } == 2, "both reports, once each: \(seen.withLock { $0 })")
        #expect(!states.withLock { $0 }.contains(.resetting), "a recorded fault is not ours: \(states.withLock { $0 })")
    }
}
