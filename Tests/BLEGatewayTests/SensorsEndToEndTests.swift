import BLEDomain
import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// Sensors through the whole gateway: the simulator's sensors advertise drifting readings over its H4 socket, the
    /// gateway decodes them where it turns sightings into readings, and a subscriber on a real mosquitto reads
    /// `…/sensors/<address>`: every format arrives, with the simulator's values, each packet once (the repeats it
    /// advertises in between are dropped before the spool and counted in health), all matching schema/v1.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct SensorsEndToEndTests {
        /// Four sensors next to the gateway, a new packet every second of virtual time, advertising every 100 ms.
        static let yaml = """
            name: sensors
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-s, position: [0, 0]}]
            beacons:
              - {name: s-bthome, type: sensor-bthome, temperature_c: 21.0, humidity_pct: 40, battery_pct: 88,
                 drift_c: 1.0, drift_period_s: 60, packet_interval_s: 1, interval_ms: 100, position: [1, 0]}
              - {name: s-atc, type: sensor-atc1441, address: "A4:C1:38:00:00:01", address_type: public,
                 temperature_c: 23.5, humidity_pct: 55, packet_interval_s: 1, interval_ms: 100, position: [0, 1]}
              - {name: s-pvvx, type: sensor-pvvx, address: "A4:C1:38:00:00:02", address_type: public,
                 temperature_c: 19.5, humidity_pct: 38, packet_interval_s: 1, interval_ms: 100, position: [1, 1]}
              - {name: s-ruuvi, type: sensor-ruuvi, temperature_c: 4.0, humidity_pct: 80, packet_interval_s: 1,
                 interval_ms: 100, position: [-1, 0]}
              - {name: s-sealed, type: sensor-bthome, address: "A4:C1:38:00:00:0E", address_type: public,
                 bindkey: 231d39c1d7cc1ab1aee224cd096db932, temperature_c: 25.0, humidity_pct: 50,
                 packet_interval_s: 1, interval_ms: 100, position: [0, -1]}
              - {name: s-wrong-key, type: sensor-bthome, address: "A4:C1:38:00:00:0F", address_type: public,
                 bindkey: 00112233445566778899aabbccddeeff, temperature_c: 30.0, humidity_pct: 60,
                 packet_interval_s: 1, interval_ms: 100, position: [-1, -1]}
              - {name: s-mibeacon, type: sensor-mibeacon, address: "A4:C1:38:00:00:10", address_type: public,
                 temperature_c: 22.0, humidity_pct: 47, battery_pct: 76, packet_interval_s: 1, interval_ms: 100,
                 position: [2, 0]}
              - {name: s-mi-sealed, type: sensor-mibeacon, address: "A4:C1:38:00:00:11", address_type: public,
                 bindkey: 814aac74c4f17b6c1581e1ab87816b99, temperature_c: 18.0, humidity_pct: 62, battery_pct: 55,
                 packet_interval_s: 1, interval_ms: 100, position: [0, 2]}
            """
        static let sealed = "a4c13800000e"
        static let wrongKey = "a4c13800000f"
        static let miSealed = "a4c138000011"

        @Test func everySimulatedSensorIsPublishedOncePerPacketWithItsValues() async throws {
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer {
                f.broker.terminate()
                try? FileManager.default.removeItem(at: f.directory)
            }
            let (scenario, simulator, clock) = try f.simulator(Self.yaml, factor: 5)
            let source = HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-s")), mode: .exclusive,
                scan: GatewayConfiguration.Scan(),
                clock: clock, logger: Logger(label: "test"))
            var c = f.configuration()
            c.gateway.id = "gw-s"
            c.publishing.healthIntervalSeconds = 1
            c.sensors.minIntervalSeconds = 0
            // The sealed sensor's key as the scenario gives it; the other's is not the one it encrypts with.
            c.sensors.bindkeys = [
                try #require(BDAddress("A4:C1:38:00:00:0E")): Array(
                    SimAESTestsKey.hex("231d39c1d7cc1ab1aee224cd096db932")),
                try #require(BDAddress("A4:C1:38:00:00:0F")): Array(
                    SimAESTestsKey.hex("ffeeddccbbaa99887766554433221100")),
                try #require(BDAddress("A4:C1:38:00:00:11")): Array(
                    SimAESTestsKey.hex("814aac74c4f17b6c1581e1ab87816b99")),
            ]
            let runtime = try GatewayRuntime(
                configuration: c, source: source, clock: clock, clockSynchronized: { true })
            let observer = try Observer(port: f.broker.port, filter: "\(f.prefix)/gw-s/#")
            let sim = Task { try await simulator.run() }
            let gateway = Task { try await runtime.run() }
            defer { observer.stop() }

            let sensorPrefix = "\(f.prefix)/gw-s/sensors/"
            func published() -> [(topic: String, json: [String: Any])] {
                observer.lock.withLock { observer.messages.filter { $0.topic.hasPrefix(sensorPrefix) } }
            }
            // Each sensor publishes at least five packets.
            try await EndToEndSuites.waitFor("five packets from each sensor", limit: .seconds(60)) {
                let byTopic = Dictionary(grouping: published(), by: \.topic)
                // The undecryptable sensor's frames all read alike (no values): the first is published, the rest
                // are repeats.
                return byTopic.count == 8
                    && byTopic.allSatisfy { $0.key.hasSuffix(Self.wrongKey) || $0.value.count >= 5 }
            }
            // Sealed by the simulator's own AES-CCM, opened by the gateway's: the values, marked encrypted.
            for topic in [Self.sealed, Self.miSealed] {
                let sealed = published().filter { $0.topic == sensorPrefix + topic }
                #expect(!sealed.isEmpty && sealed.allSatisfy { $0.json["encrypted"] as? Bool == true }, "\(topic)")
            }
            // With the wrong key: never a value, the reason said.
            let wrong = published().filter { $0.topic == sensorPrefix + Self.wrongKey }
            #expect(
                !wrong.isEmpty
                    && wrong.allSatisfy {
                        $0.json["undecryptable"] as? String == "authentication_failed"
                            && ($0.json["values"] as? [String: Any])?.isEmpty == true
                    }, "\(wrong.first?.json ?? [:])")
            let all = published().filter { $0.topic != sensorPrefix + Self.wrongKey }
            let emitters = Dictionary(uniqueKeysWithValues: scenario.emitters.map { ($0.address.topicComponent, $0) })
            var formats: Set<String> = []
            for (topic, json) in all {
                let e = try #require(emitters[String(topic.dropFirst(sensorPrefix.count))], "\(topic)")
                guard case .sensor(let sensor) = e.frame else {
                    Issue.record("\(topic) is not a sensor")
                    continue
                }
                formats.insert(json["format"] as? String ?? "")
                let values = try #require(json["values"] as? [String: Double])
                let counter = try #require(json["counter"] as? Int)
                // The packet's measurement time follows from its counter (one packet per second of virtual time).
                let truth = sensor.values(at: Double(counter) * sensor.packetIntervalSeconds)
                guard sensor.format != .mibeacon else {
                    // One object per packet, in turn (as an LYWSD03MMC sends them): tenths of a degree and a percent.
                    #expect(values.count == 1, "\(topic): \(values)")
                    if let t = values["temperature_c"] { #expect(abs(t - truth.temperature) <= 0.051, "\(topic)") }
                    if let h = values["humidity_pct"] { #expect(abs(h - truth.humidity) <= 0.051, "\(topic)") }
                    if let b = values["battery_pct"] { #expect(b == sensor.batteryPercent.rounded(), "\(topic)") }
                    continue
                }
                let temperature = try #require(values["temperature_c"])
                // ATC1441 carries tenths of a degree and whole percent; the others hundredths (Ruuvi 0.005 °C).
                #expect(abs(temperature - truth.temperature) <= 0.051, "\(topic): \(temperature) vs \(truth)")
                #expect(abs((values["humidity_pct"] ?? -1) - truth.humidity) <= 0.51, "\(topic): \(values)")
            }
            #expect(formats == ["bthome", "atc1441", "pvvx", "ruuvi-5", "mibeacon"])
            // Every object the MiBeacon sensors send arrives: temperature, humidity and battery, from both.
            for address in ["a4c138000010", Self.miSealed] {
                let quantities = Set(
                    all.filter { $0.topic == sensorPrefix + address }
                        .flatMap { (($0.json["values"] as? [String: Double]) ?? [:]).keys })
                #expect(quantities == ["temperature_c", "humidity_pct", "battery_pct"], "\(address): \(quantities)")
            }
            #expect(all.contains { $0.topic.hasSuffix(Self.sealed) && $0.json["format"] as? String == "bthome" })
            // Once per packet: no counter twice on one topic (the counters of these sensors do not wrap in a minute).
            for (topic, readings) in Dictionary(grouping: all, by: \.topic) {
                let counters = readings.compactMap { $0.json["counter"] as? Int }
                #expect(Set(counters).count == counters.count, "\(topic): \(counters)")
            }
            // The repeats in between were dropped before the spool, and counted.
            try await EndToEndSuites.waitFor("health with sensor counters", limit: .seconds(30)) {
                observer.lock.withLock {
                    observer.messages.contains { m in
                        m.topic.hasSuffix("/health")
                            && ((m.json["sensors"] as? [String: Any])?["repeats"] as? Int ?? 0) > 0
                    }
                }
            }
            let problems = try SchemaValidation.problems(
                observer.lock.withLock { observer.messages }, prefix: f.prefix, directory: f.directory)
            #expect(problems == nil, "schema validation: \(problems ?? "")")
            // Ordered: the gateway first (it says offline), then the radio.
            gateway.cancel()
            _ = try? await gateway.value
            sim.cancel()
            _ = try? await sim.value
        }
    }
}

/// Hex for the keys above.
enum SimAESTestsKey {
    static func hex(_ s: String) -> [UInt8] {
        let d = Array(s)
        return stride(from: 0, to: d.count, by: 2).map { UInt8(String(d[$0..<($0 + 2)]), radix: 16)! }
    }
}
