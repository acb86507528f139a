import BLEDomain
import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `blegateway explain` and `run --trace`: each stage says what it did with a report, and where it stops.
@Suite struct SightingExplainerTests {
    static let address = BDAddress(rawValue: 0xC0FF_EE00_0001)
    static let uuid: [UInt8] = [
        0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2,
        0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
    ]

    static func sighting(_ ad: [UInt8], rssi: Int8? = -60, connectable: Bool = false, at t: Double = 0) -> Sighting {
        Sighting(
            address: address, addressType: .random, rssi: rssi, txPower: nil, timestamp: t,
            isConnectable: connectable, isScanResponse: false, advertisement: Advertisement(decoding: ad[...]))
    }

    /// Flags, then Apple's iBeacon frame (major 1, minor 2, measured power −59).
    static let iBeacon: [UInt8] = [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + uuid + [0, 1, 0, 2, 0xC5]
    /// Flags and a complete local name "Thermo 1".
    static let named: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0x09] + Array("Thermo 1".utf8)

    @Test func theFilterSaysWhichTermStopsAReportAndAgreesWithTheRuntimesFilter() throws {
        let filters = [
            ["rssi:-70"], ["name:Kitchen"], ["company:0x0059"], ["uuid:FEAA"], ["address:C0:FF:EE:00:00:02"],
            ["uuid:E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"], ["company:0x004C", "rssi:-90"], [],
        ]
        let sightings = [
            Self.sighting(Self.iBeacon), Self.sighting(Self.iBeacon, rssi: -80), Self.sighting(Self.named),
            Self.sighting(Self.named, rssi: nil),
        ]
        for terms in filters {
            let f = try ScanFilter(parsing: terms)
            for s in sightings {
                #expect((f.rejection(s) == nil) == f.matches(s), "\(terms) on \(s.advertisement.data.count) bytes")
            }
        }
        var c = GatewayConfiguration()
        c.scan.filters = ["rssi:-70"]
        var e = try SightingExplainer(configuration: c)
        let steps = e.explain(Self.sighting(Self.iBeacon, rssi: -80), at: 0)
        #expect(steps.map(\.stage) == ["heard", "scan filter"])
        #expect(steps.last?.passes == false && steps.last?.detail.contains("heard at -80 dBm, below it") == true)
    }

    @Test func aPassingBeaconIsNamedByItsTopicSummarisedPerIntervalAndMatchedToItsRegions() throws {
        var c = GatewayConfiguration()
        c.publishing.rangingIntervalSeconds = 2
        c.regions = try YAMLConfigurationReader().readRegions(
            "regions:\n  - {id: lobby, uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major: 1, enter_rssi: -70}\n")
        var e = try SightingExplainer(configuration: c)
        let steps = e.explain(Self.sighting(Self.iBeacon), at: 0)
        #expect(steps.allSatisfy { $0.passes })
        #expect(steps.map(\.stage) == ["heard", "scan filter", "identity", "ranging", "regions", "raw stream"])
        #expect(steps[0].detail.contains("a beacon frame: ibeacon"))
        #expect(steps[2].detail.contains("…/beacons/ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2"))
        #expect(steps[3].detail.contains("one summary per 2.0 s"))
        #expect(steps[4].detail.contains("region lobby matches") && steps[4].detail.contains("-70"))
        #expect(steps[5].detail.contains("raw_advertisements is false"))
    }

    @Test func theRawStreamsRateLimitAndPeripheralIntentsAreShown() throws {
        var c = GatewayConfiguration()
        c.publishing.rawAdvertisements = true
        c.publishing.rawMaxPerSecond = 1
        c.scan.filters = ["uuid:FEAA"]
        c.peripherals = [PeripheralIntent(match: .namePrefix("Thermo"), name: "thermometers")]
        var e = try SightingExplainer(configuration: c)
        // Filtered out as a beacon, still wanted as a peripheral: intents see every report.
        let filtered = e.explain(Self.sighting(Self.named, connectable: true), at: 0)
        #expect(filtered.map(\.stage) == ["heard", "scan filter", "peripherals"])
        #expect(filtered[2].detail.contains("thermometers: the gateway connects to it"))
        c.scan.filters = []
        e = try SightingExplainer(configuration: c)
        let first = e.explain(Self.sighting(Self.iBeacon), at: 10)
        let second = e.explain(Self.sighting(Self.iBeacon), at: 10.1)
        #expect(first.last?.detail.contains("on …/raw/c0ffee000001") == true)
        #expect(second.last?.detail.contains("over publishing.raw_max_per_s") == true)
        let later = e.explain(Self.sighting(Self.iBeacon), at: 11.2)
        #expect(later.last?.detail.contains("on …/raw/") == true)
    }
}

extension YAMLConfigurationReader {
    /// The regions of a YAML snippet, read as the file reader reads them.
    func readRegions(_ yaml: String) throws -> [Region] {
        var r = self
        return try r.read(yaml).regions
    }
}

/// The command itself, against the simulator speaking H4 on a socket, as an operator runs it.
@Suite(.serialized) struct ExplainCommandTests {
    @Test func explainShowsEachReportFromTheAddressAndWhatTheConfigurationDoesWithIt() async throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("explain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenario = BuiltProducts.repositoryRoot.appendingPathComponent("config/scenarios/office.yaml").path
        let sim = try Child(
            BuiltProducts.blegateway,
            [
                "sim", "--scenario", scenario, "--socket-dir", dir.path,
                "--speed", "1",
            ], log: dir.appendingPathComponent("sim.log").path)
        defer { sim.stop() }
        let socket = dir.appendingPathComponent("gw-lobby.sock").path
        try await waitUntil("the simulator's socket") { FileManager.default.fileExists(atPath: socket) }
        let config = dir.appendingPathComponent("gateway.yaml")
        try "scan:\n  filters: [\"rssi:-20\"]\n".write(to: config, atomically: true, encoding: .utf8)
        let explained = try ToolRun.run(
            BuiltProducts.blegateway,
            [
                "explain", "00:1B:DC:10:00:01", "--config", config.path, "--device", "unix:\(socket)", "--duration",
                "2",
            ])
        let (status, output) = (explained.status, explained.output)
        #expect(status == 0, "\(output)")
        // The lobby sensor advertises every 500 ms: a few reports, each stopped by the RSSI floor, with its reason.
        let heard = output.components(separatedBy: "heard: RSSI").count - 1
        #expect(heard >= 2, "\(output)")
        #expect(output.contains("name \"Thermo lobby\""))
        #expect(output.contains("scan filter: STOPS HERE — scan.filters rssi:-20: heard at"))
        #expect(output.contains("reports from 00:1B:DC:10:00:01"))
    }
}

/// `run --trace ADDRESS`: the running gateway logs the traced address's reports with their stages, and nothing for
/// other addresses.
@Suite struct RuntimeTraceTests {
    final class Captured: LogHandler, @unchecked Sendable {
        let lines = Locked<[String]>([])
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
            file: String, function: String, line: UInt
        ) {
            lines.withLock { $0.append(message.description) }
        }
    }

    struct Silent: SightingSource {
        func run(
            adapter: @escaping @Sendable (AdapterReport) -> Void,
            sighting: @escaping @Sendable (Sighting) -> Void
        ) async throws {
            try await Task.sleep(for: .seconds(3600))
        }
        var counters: SightingSourceCounters { SightingSourceCounters() }
    }

    @Test func theTracedAddressIsLoggedWithItsStagesAndNoOtherIs() throws {
        let dir = NSTemporaryDirectory() + "trace-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = GatewayConfiguration()
        c.spool.path = dir + "/spool.sqlite"
        c.remoteConfig.enabled = false
        c.scan.filters = ["rssi:-70"]
        let captured = Captured()
        let runtime = try GatewayRuntime(
            configuration: c, source: Silent(),
            logger: Logger(label: "trace-test") { _ in captured },
            clockSynchronized: { true })
        runtime.trace(SightingExplainerTests.address)
        runtime.observe(SightingExplainerTests.sighting(SightingExplainerTests.iBeacon, rssi: -80))
        var other = SightingExplainerTests.sighting(SightingExplainerTests.iBeacon)
        other.address = BDAddress(rawValue: 0xC0FF_EE00_0002)
        runtime.observe(other)
        let traces = captured.lines.withLock { $0 }.filter { $0.hasPrefix("trace ") }
        #expect(traces.count == 1, "\(traces)")
        #expect(traces.first?.contains("scan filter: STOPS HERE — scan.filters rssi:-70: heard at -80 dBm") == true)
    }
}
