import BLEDomain
import BLEHCI
import BLEPublishing
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// Two gateways hear one broadcasting sensor, each with Home Assistant's discovery on: the broker holds exactly
    /// one document for the sensor (the shared node), not one per gateway, with one entity per quantity following both
    /// gateways' streams; each gateway's own device stays under its own node. Three gateways in the office used to
    /// give three entities per quantity.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct HomeAssistantSharedSensorEndToEndTests {
        static let yaml = """
            name: shared-sensor
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-s1, position: [0, 0]}, {id: gw-s2, position: [4, 0]}]
            beacons:
              - {name: s-bthome, type: sensor-bthome, address: "A4:C1:38:00:00:55", address_type: public,
                 temperature_c: 21.0, humidity_pct: 40, battery_pct: 88, packet_interval_s: 1, interval_ms: 100,
                 position: [2, 0]}
            """

        @Test func twoGatewaysHearingOneSensorAnnounceOneDocumentForIt() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer {
                f.broker.terminate()
                try? FileManager.default.removeItem(at: f.directory)
            }
            let (_, simulator, clock) = try f.simulator(Self.yaml, factor: 5)
            let discovery = try Observer(port: f.broker.port, filter: "homeassistant/device/#")
            defer { discovery.stop() }
            let streams = try Observer(port: f.broker.port, filter: "\(f.prefix)/+/sensors/#")
            defer { streams.stop() }
            let sim = Task { try await simulator.run() }
            var gateways: [Task<Void, Error>] = []
            for id in ["gw-s1", "gw-s2"] {
                let source = HCISightingSource(
                    spec: .unix(path: simulator.socketPath(for: id)), mode: .exclusive,
                    scan: GatewayConfiguration.Scan(), clock: clock, logger: Logger(label: "test"))
                var c = f.configuration()
                c.gateway.id = id
                c.spool.path = f.directory.appendingPathComponent("\(id).sqlite").path
                c.homeAssistant.enabled = true
                let runtime = try GatewayRuntime(
                    configuration: c, source: source, clock: clock, clockSynchronized: { true })
                gateways.append(Task { try await runtime.run() })
            }
            defer {
                for g in gateways { g.cancel() }
                sim.cancel()
            }
            let shared = "homeassistant/device/blegateway-sensors/blegateway_sensor_a4c138000055/config"
            func topics() -> Set<String> { discovery.lock.withLock { Set(discovery.messages.map(\.topic)) } }
            try await EndToEndSuites.waitFor("both gateways' devices and the sensor's", limit: .seconds(60)) {
                let t = topics()
                return t.contains(shared) && t.contains("homeassistant/device/gw-s1/blegateway_gw-s1/config")
                    && t.contains("homeassistant/device/gw-s2/blegateway_gw-s2/config")
            }
            // Both gateways publish the sensor's readings, each on its own stream.
            try await EndToEndSuites.waitFor("both gateways' sensor streams", limit: .seconds(60)) {
                let t = streams.lock.withLock { Set(streams.messages.map(\.topic)) }
                return t == ["\(f.prefix)/gw-s1/sensors/a4c138000055", "\(f.prefix)/gw-s2/sensors/a4c138000055"]
            }
            #expect(
                streams.lock.withLock {
                    streams.messages.allSatisfy { ($0.json["gateway"] as? String)?.hasPrefix("gw-s") == true }
                },
                "each reading names the gateway that heard it")
            // One document for the sensor, whichever gateway sent it, and none of a gateway's own for it.
            let sensorTopics = topics().filter { $0.contains("a4c138000055") }
            #expect(sensorTopics == [shared], "\(sensorTopics)")
            let late = try Observer(port: f.broker.port, filter: shared)
            defer { late.stop() }
            try await EndToEndSuites.waitFor("the retained document") { !late.lock.withLock { late.messages.isEmpty } }
            let document = try #require(late.lock.withLock { late.messages.first?.json })
            let cmps = try #require(document["cmps"] as? [String: [String: Any]])
            #expect(Set(cmps.keys).isSuperset(of: ["s_temperature_c", "s_humidity_pct", "s_battery_pct", "s_rssi"]))
            for (key, component) in cmps where key != "s_rssi" {
                #expect(component["unique_id"] as? String == "blegateway_sensor_a4c138000055_\(key.dropFirst(2))")
                #expect(component["state_topic"] as? String == "\(f.prefix)/+/sensors/a4c138000055")
            }
        }
    }
}
