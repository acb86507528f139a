import BLEDomain
import BLEESPHome
import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// The venv the Makefile builds for Home Assistant's ESPHome client (`make esphome-venv`, in `make test`).
let esphomeClientPython = "/var/cache/blegateway-esphome-venv/bin/python"

extension EndToEndSuites {
    /// The gateway as an ESPHome Bluetooth proxy, judged by Home Assistant's own client library (aioesphomeapi 29.9,
    /// the one Home Assistant 2025.4 pins): the simulator's beacons advertise over its H4 socket, the gateway hears
    /// them through its controller session, and the library connects with the Noise key, reads the device info and
    /// takes the raw advertisements.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .enabled(
            if: TestDependency.runs(FileManager.default.isExecutableFile(atPath: esphomeClientPython)),
            "needs aioesphomeapi in \(esphomeClientPython) (make esphome-venv)"),
        .timeLimit(.minutes(2)), .serialized)
    struct ESPHomeProxyEndToEndTests {
        static let yaml = """
            name: esphome
            radio: {loss_probability: 0, shadowing_sigma_db: 0}
            gateways: [{id: gw-e, position: [0, 0]}]
            beacons:
              - {name: ib-1, type: ibeacon, uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893e", major: 1, minor: 7,
                 interval_ms: 100, position: [1, 0]}
              - {name: ib-2, type: ibeacon, uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893e", major: 2, minor: 9,
                 interval_ms: 100, position: [0, 2]}
              - {name: ed-1, type: eddystone-uid, namespace: "00112233445566778899", instance: "aabbccddeeff",
                 interval_ms: 100, position: [-1, 1]}
            """
        /// 32 bytes, base64: the key Home Assistant is given.
        static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

        static var script: String {
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("tools/esphome_client.py").path
        }

        /// The client script on a thread of its own (it runs for seconds; the gateway shares this process's pool).
        static func client(port: Int, key: String, seconds: Double) async throws -> [[String: Any]] {
            let run = try await withCheckedThrowingContinuation { (c: CheckedContinuation<ToolRun, Error>) in
                DispatchQueue.global().async {
                    c.resume(
                        with: Result {
                            try ToolRun.run(
                                esphomeClientPython, [script, "127.0.0.1", "\(port)", key, "gw-e", "\(seconds)"])
                        })
                }
            }
            try #require(run.status == 0, "esphome_client.py: \(run.output)")
            return run.output.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        @Test func homeAssistantsClientGetsTheDeviceAndEveryBeaconsAdvertisementBytesEqual() async throws {
            try TestDependency.require(
                FileManager.default.isExecutableFile(atPath: esphomeClientPython), "aioesphomeapi's venv")
            signal(SIGPIPE, SIG_IGN)
            let f = try EndToEndSuites.Fixture()
            defer {
                f.broker.terminate()
                try? FileManager.default.removeItem(at: f.directory)
            }
            let (scenario, simulator, clock) = try f.simulator(Self.yaml, factor: 1)
            let source = HCISightingSource(
                spec: .unix(path: simulator.socketPath(for: "gw-e")), mode: .exclusive,
                scan: GatewayConfiguration.Scan(), clock: clock, logger: Logger(label: "test"))
            var c = f.configuration()
            c.gateway.id = "gw-e"
            c.esphomeAPI.enabled = true
            c.esphomeAPI.host = "127.0.0.1"
            c.esphomeAPI.port = try Loopback.freePort()
            c.esphomeAPI.key = Array(try #require(Data(base64Encoded: Self.key)))
            let runtime = try GatewayRuntime(
                configuration: c, source: source, clock: clock, clockSynchronized: { true })
            let sim = Task { try await simulator.run() }
            let gateway = Task { try await runtime.run() }
            defer {
                gateway.cancel()
                sim.cancel()
            }
            let proxy = try #require(runtime.esphome)
            try await waitUntil("the controller's address known", limit: .seconds(30)) {
                runtime.state.withLock { $0.adapters.current?.state == .poweredOn }
            }

            // A client with another key is refused as Home Assistant recognises it, and counted.
            let wrong = try await Self.client(
                port: c.esphomeAPI.port, key: "/wECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", seconds: 0)
            #expect(wrong.first?["error"] as? String == "InvalidEncryptionKeyAPIError", "\(wrong)")
            #expect(proxy.statistics.wrongKey == 1)

            let lines = try await Self.client(port: c.esphomeAPI.port, key: Self.key, seconds: 3)
            let info = try #require(lines.first?["device_info"] as? [String: Any], "\(lines.prefix(3))")
            let gatewayAddress = try #require(scenario.gateways.first?.address)
            #expect(info["name"] as? String == "gw-e")
            #expect(info["mac_address"] as? String == gatewayAddress.description)
            #expect(info["bluetooth_proxy_feature_flags"] as? Int == 0b10_0001, "passive scan and raw advertisements")
            #expect(info["api_version"] as? [Int] == [1, 10])

            // Every advertisement the simulator's beacons send, as they send it: address, type and AD bytes.
            let ads = lines.compactMap { $0["ad"] as? [String: Any] }
            struct Heard: Hashable {
                var address: UInt64
                var type: Int
                var data: String
            }
            let heard = Set(
                ads.map {
                    Heard(
                        address: ($0["address"] as? NSNumber)?.uint64Value ?? 0, type: $0["address_type"] as? Int ?? -1,
                        data: $0["data"] as? String ?? "")
                })
            let sent = Set(
                scenario.emitters.map {
                    Heard(
                        address: $0.address.rawValue, type: Int($0.addressType),
                        data: $0.frame.advertisingData().map { String(format: "%02x", $0) }.joined())
                })
            #expect(heard == sent)
            // About ten a second from each of three beacons for three seconds; none dropped, and the client got
            // every one the proxy says it sent.
            let done = try #require(lines.last?["done"] as? Int)
            #expect(done == ads.count && done >= 30, "\(done) advertisements")
            let stats = proxy.statistics
            #expect(stats.advertisementsDropped == 0)
            #expect(stats.advertisementsSent >= UInt64(done))
            #expect(lines.last?["list_entities"] as? [Int] == [0, 0], "a proxy with no entities of its own")

            // A client killed while subscribed (Home Assistant's host losing power looks the same to us once the
            // kernel closes the socket) frees the one subscription: the next client gets the advertisements.
            let before = proxy.statistics.advertisementsSent
            let doomed = Process()
            doomed.executableURL = URL(fileURLWithPath: esphomeClientPython)
            doomed.arguments = [Self.script, "127.0.0.1", "\(c.esphomeAPI.port)", Self.key, "gw-e", "60"]
            doomed.standardOutput = FileHandle.nullDevice
            try doomed.run()
            try await waitUntil("the doomed client subscribed", limit: .seconds(20)) {
                proxy.statistics.advertisementsSent > before
            }
            kill(doomed.processIdentifier, SIGKILL)
            try await waitUntil("its connection gone", limit: .seconds(20)) { proxy.statistics.clients == 0 }
            let next = try await Self.client(port: c.esphomeAPI.port, key: Self.key, seconds: 1)
            #expect(next.contains { $0["ad"] != nil }, "the next client takes the advertisements")
            #expect(proxy.statistics.subscriptionsRefused == 0)
        }
    }
}
