import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// Faults on the scenario's timeline, observed from the host's side of the socket.
@Suite struct FaultTests {
    static let yaml = """
        name: faults
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        beacons:
          - {name: b1, type: ibeacon, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, minor: 1, position: [2, 0]}
        faults:
          - {at_s: 2, gateway: gw-a, type: hardware_error, hardware_code: 0x42, duration_s: 3}
          - {at_s: 10, gateway: gw-a, type: unplug, duration_s: 5}
          - {at_s: 20, gateway: gw-a, type: silence, duration_s: 5}
        """

    /// A condition another thread makes true (bounded, so a bug fails instead of hanging).
    static func eventually(_ what: String, _ condition: () -> Bool) async {
        #expect(await BLETestSupport.eventually(condition), "never happened: \(what)")
    }

    @Test func hardwareErrorIsSentThenCommandsGoUnansweredUntilPowerReturns() async throws {
        let h = try SimHarness(Self.yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 3)
        // HCI_Hardware_Error (0x10), one parameter: the scenario's hardware code.
        var packets: [H4Packet] = []
        while true {
            let p = try c.receive()
            if p.payload.first == 0x10 {
                #expect(p.h4Bytes == [0x04, 0x10, 0x01, 0x42])
                break
            }
            packets.append(p)
        }
        c.send(Bytes.reset)
        await Self.eventually("the command is dropped") { h.simulator.nodes[0].stats.commandsWhilePoweredOff == 1 }
        await h.advance(seconds: 3)
        // Power is back: the controller answers again, from power-on defaults.
        #expect(try c.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func unplugClosesTheStreamAndRemovesTheSocketUntilReplugged() async throws {
        let h = try SimHarness(Self.yaml)
        let c = try h.client("gw-a")
        try h.bringUp(c)
        let path = h.simulator.socketPath(for: "gw-a")
        await h.advance(seconds: 11)
        // The host reads end of file.
        #expect(throws: HCISocketHost.Closed.self) {
            while true { _ = try c.receive() }
        }
        await Self.eventually("socket removed") { !FileManager.default.fileExists(atPath: path) }
        await h.advance(seconds: 5)
        await Self.eventually("socket back") { FileManager.default.fileExists(atPath: path) }
        let again = try h.client("gw-a")
        #expect(try again.command(Bytes.reset) == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func silenceKeepsCommandsAnsweredButStopsReports() async throws {
        let h = try SimHarness(Self.yaml)
        await h.advance(seconds: 20)  // past the hardware error and the unplug
        let path = h.simulator.socketPath(for: "gw-a")
        await Self.eventually("socket re-plugged") { FileManager.default.fileExists(atPath: path) }
        let c = try h.client("gw-a")
        try h.bringUp(c)
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 4)
        var packets: [H4Packet] = []
        #expect(try c.command(Bytes.leSetScanEnable(false), before: &packets).last == 0x00)
        #expect(ScanningTests.reports(packets).isEmpty)
        await h.advance(seconds: 2)  // silence ends at 25 s
        try c.command(Bytes.leSetScanEnable(true))
        await h.advance(seconds: 2)
        packets = []
        try c.command(Bytes.leSetScanEnable(false), before: &packets)
        #expect(!ScanningTests.reports(packets).isEmpty)
    }

    @Test func groundTruthListsDistancesPositionsAndTheFaultTimeline() async throws {
        let scenario = try ScenarioLoader.parse(Self.yaml)
        let dir = NSTemporaryDirectory() + "blesim-truth-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = SimulatorOptions(socketDirectory: dir)
        options.truthPath = dir + "/truth.jsonl"
        options.duration = 12
        let sim = try Simulator(
            scenario: scenario, options: options, clock: FreeRunningClock(), pacing: .clock(batch: .zero))
        try await sim.run()
        let lines = try String(contentsOfFile: dir + "/truth.jsonl", encoding: .utf8).split(separator: "\n")
        let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let distances = objects.filter { $0["type"] as? String == "distance" }
        #expect(distances.count == 13)  // t = 0…12
        let d = try #require(distances.first { ($0["t"] as? Double) == 5 })
        #expect(d["gateway"] as? String == "gw-a")
        #expect(d["beacon"] as? String == "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-1")
        #expect(d["distance_m"] as? Double == 2)
        let faults = objects.filter { $0["type"] as? String == "fault" }.map {
            "\($0["t"]!) \($0["fault"]!) \($0["phase"]!)"
        }
        #expect(faults == ["2.0 hardware_error start", "5.0 hardware_error end", "10.0 unplug start"])
        #expect(!FileManager.default.fileExists(atPath: sim.socketPath(for: "gw-a")))
    }
}
