import BLEDomain
import BLEHCI
import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEGateway

extension EndToEndSuites {
    /// Issue #42, "idle is idle": a whole gateway (spool, publisher, ticker, remote config, a real mosquitto) with
    /// nothing to do asks its clock for no wake-up until the next health report, and the first beacon gives it its
    /// summaries back. `blegateway-bench gateway-idle` measures what that costs as a process (docs/BENCHMARKS.md).
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct IdleGatewayEndToEndTests {
        /// An adapter that scans and hears nothing until `beacon` is signalled, then one iBeacon advertisement.
        final class QuietSource: SightingSource, @unchecked Sendable {
            let beacon = WakeSignal()
            var counters: SightingSourceCounters { SightingSourceCounters() }

            func run(
                adapter: @escaping @Sendable (AdapterReport) -> Void,
                sighting: @escaping @Sendable (Sighting) -> Void
            ) async throws {
                adapter(AdapterReport(state: .poweredOn, device: "quiet", mode: .exclusive))
                await beacon.wait()
                let ad: [UInt8] = [
                    0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15, 0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60,
                    0xD0,
                    0xF5, 0xA7, 0x10, 0x96, 0xE0, 0x00, 0x01, 0x00, 0x02, 0xC5,
                ]
                sighting(
                    Sighting(
                        address: BDAddress(rawValue: 0xC0FF_EE01), addressType: .public, rssi: -60, txPower: nil,
                        timestamp: 0, isConnectable: false, isScanResponse: false,
                        advertisement: Advertisement(decoding: ad[...])))
                await WakeSignal().wait()  // nothing more, until cancelled
                throw CancellationError()
            }
        }

        @Test func anIdleGatewayAsksItsClockForNoWakeUpUntilABeaconGivesItSomethingToSummarise() async throws {
            let f = try Fixture()
            defer { f.broker.terminate() }
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/\(f.gateway)/#")
            defer { observer.stop() }
            var c = f.configuration()  // a summary every 0.2 s while there is something to summarise
            c.publishing.healthIntervalSeconds = 60  // the first report 5 s after start, the next a minute later
            let clock = CountingClock()
            let source = QuietSource()
            let runtime = try GatewayRuntime(
                configuration: c, source: source, clock: clock, clockSynchronized: { true })
            let task = Task { try await runtime.run() }
            defer { task.cancel() }
            try await EndToEndSuites.waitFor("the first health report", limit: .seconds(20)) {
                !observer.states("\(f.prefix)/\(f.gateway)/health").isEmpty
            }
            // Its acknowledgement deleted with the spool's next commit: then nothing is left to do.
            try await EndToEndSuites.waitFor("the spool empty", limit: .seconds(10)) {
                runtime.spoolStatistics.depth == 0
            }
            try await Task.sleep(for: .milliseconds(500))
            let before = clock.sleeps
            try await Task.sleep(for: .seconds(3))
            // Before issue #42's fixes: a sleep per commit window (100 ms) and per ranging interval (0.2 s here), 45
            // in these 3 s.
            #expect(clock.sleeps == before, "\(clock.sleeps - before) sleeps in 3 s with nothing to do")

            source.beacon.signal()
            try await EndToEndSuites.waitFor("the beacon's summaries", limit: .seconds(10)) {
                observer.beacons(after: 0).count >= 2
            }
            #expect(clock.sleeps > before + 2, "summaries and commits asked for their windows again")
        }
    }
}
