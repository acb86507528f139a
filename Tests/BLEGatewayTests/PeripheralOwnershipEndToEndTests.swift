import BLEPublishing
import BLETestSupport
import Foundation
import Testing

extension EndToEndSuites {
    /// One owner per peripheral through a real broker: the simulated office, its three gateways as real processes,
    /// each configured with the same five sensors (`connections.owner_lease_s`). Each sensor ends up connected by one
    /// gateway; when the owner is killed, its claims stand for their lease (it might only be cut off), then another
    /// connects them within the lease + 10 s; when another's adapter loses power, its sensors move within the lease
    /// + 10 s; a sensor carried from the lobby into the lab moves to the lab's gateway by the margin rule within the
    /// dwell + the lease + 5 s of arriving (it connects once the lobby's lease has run out); the lab's network to the
    /// broker stalling for less than its fence changes nothing, and stalling for longer than the lease moves its
    /// sensors to the lobby, the lab letting go first; and at no moment do two gateways hold a link to the same
    /// sensor, by the simulator's own link table (its ground truth) as well as by every gateway's retained state
    /// stream.
    @Suite(
        .enabled(
            if: TestDependency.runs(Mosquitto.isAvailable && Relay.isAvailable),
            "needs /usr/sbin/mosquitto and /usr/bin/socat (make test installs them)"),
        .timeLimit(.minutes(5)), .serialized)
    struct PeripheralOwnershipEndToEndTests {
        struct StateEvent: Sendable {
            var gateway: String
            var address: String
            var state: String
            var ts: Double
        }

        final class Collector: @unchecked Sendable {
            let client: MQTTClient
            private let lock = NSLock()
            private var events: [StateEvent] = []
            /// Gateways killed by the test, and when: their last retained states stay, their links do not.
            private var killed: [String: Double] = [:]
            private var runner: Task<Void, Error>?
            private var task: Task<Void, Never>?

            init(port: Int, prefix: String) throws {
                var c = MQTTConfiguration()
                c.host = "127.0.0.1"
                c.port = port
                c.clientID = "ownership-observer"
                client = MQTTClient(configuration: c)
                let stream = try client.subscribe("\(prefix)/+/peripherals/+/state", qos: .atLeastOnce)
                runner = Task { try await client.run() }
                task = Task {
                    for await m in stream {
                        let levels = m.topic.split(separator: "/")
                        guard levels.count == 5,
                            let json = try? JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any],
                            let state = json["state"] as? String, let ts = json["ts"] as? Double
                        else { continue }
                        self.lock.withLock {
                            self.events.append(
                                StateEvent(gateway: String(levels[1]), address: String(levels[3]), state: state, ts: ts)
                            )
                        }
                    }
                }
            }

            /// Every state event, with a `disconnected` for each link of a killed gateway at the moment it was killed.
            var all: [StateEvent] {
                lock.withLock {
                    var out = events
                    for (gw, at) in killed {
                        for a in Set(events.filter { $0.gateway == gw }.map(\.address)) {
                            out.append(StateEvent(gateway: gw, address: a, state: "disconnected", ts: at))
                        }
                    }
                    return out.sorted { $0.ts < $1.ts }
                }
            }

            func kill(_ gateway: String, at t: Double) { lock.withLock { killed[gateway] = t } }

            /// Who holds each sensor's link now (the gateways whose newest state for it is `connected`).
            var holders: [String: Set<String>] {
                var newest: [String: [String: StateEvent]] = [:]
                for e in all { newest[e.address, default: [:]][e.gateway] = e }
                return newest.mapValues { Set($0.values.filter { $0.state == "connected" }.map(\.gateway)) }
            }

            func stop() {
                runner?.cancel()
                task?.cancel()
            }
        }

        static let sensors = ["001bdc100001", "001bdc100002", "001bdc100003", "001bdc100004", "001bdc100005"]
        static let lease = 15.0
        /// How long a better gateway must hear a device by the margin before it takes it over (the default).
        static let dwell = 10.0
        /// The lobby's sensor, carried to the lab: it leaves at `walkStart` and arrives 15 s later.
        static let walker = "001bdc100001"
        static let walkStart = 110.0
        static let walkArrival = walkStart + 21 / 1.4

        /// Waits (the test's own waiting, a second at a time) until `done` holds or `limit` passes.
        func until(_ limit: Double, _ done: () -> Bool) async throws -> Bool {
            let end = Date().addingTimeInterval(limit)
            while Date() < end {
                if done() { return true }
                try await Task.sleep(for: .milliseconds(500))
            }
            return done()
        }

        @Test func eachSensorHasOneOwnerAndAnotherTakesOverWhenItDiesOrLosesItsAdapter() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "ownership-\(UUID().uuidString.prefix(8))")
            let simDir = root.appendingPathComponent("sim")
            try FileManager.default.createDirectory(at: simDir, withIntermediateDirectories: true)
            // The office, with the lab's controller losing power for 30 s once the test has killed the kitchen, and
            // the lobby's sensor carried to the lab once the lab is back: it stands at its place until 110 s, then
            // walks 21 m at 1.4 m/s (a first leg of no length holds it there for the pause).
            let office = try String(
                contentsOf: BuiltProducts.repositoryRoot.appendingPathComponent("config/scenarios/office.yaml"),
                encoding: .utf8)
            let standing =
                #"address: "00:1B:DC:10:00:01", address_type: public, interval_ms: 500, position: [1.0, 4.0, 1.0]}"#
            #expect(office.contains(standing), "the office's lobby sensor moved; this test carries it from there")
            let walking =
                #"address: "00:1B:DC:10:00:01", address_type: public, interval_ms: 500, speed_mps: 1.4, "#
                + "pause_s: \(Self.walkStart), loop: false, waypoints: [[1, 4, 1], [1, 4, 1], [22, 4, 1]]}"
            let scenario = root.appendingPathComponent("office-faults.yaml")
            try
                (office.replacingOccurrences(of: standing, with: walking)
                + "\nfaults:\n  - {at_s: 75, gateway: gw-lab, type: power_off, duration_s: 30}\n")
                .write(to: scenario, atomically: true, encoding: .utf8)
            let broker = try Mosquitto(directory: root, persistence: true)
            try broker.start()
            let truth = root.appendingPathComponent("truth.jsonl")
            // The lab's gateway reaches the broker through a relay the test stalls (steps 6 and 7).
            let relay = try Relay(to: broker.port, log: root.appendingPathComponent("relay.log").path)
            defer { relay.stop() }
            let bin = BuiltProducts.blegateway
            let sim = try Child(
                bin,
                [
                    "sim", "--scenario", scenario.path, "--socket-dir", simDir.path, "--speed", "1",
                    "--status-every", "0", "--truth", truth.path,
                ], log: root.appendingPathComponent("sim.log").path)
            defer { sim.stop() }
            let started = Date()
            // The sockets come first, then the configurations the simulator writes for each gateway (atomically).
            let written = ["gw-lobby", "gw-lab", "gw-kitchen"].flatMap {
                [
                    simDir.appendingPathComponent("\($0).sock").path,
                    simDir.appendingPathComponent("\($0).gateway-config.yaml").path,
                ]
            }
            try await waitUntil("the simulator's sockets and gateway files") {
                written.allSatisfy { FileManager.default.fileExists(atPath: $0) }
            }
            let collector = try Collector(port: broker.port, prefix: "own")
            defer { collector.stop() }
            var gateways: [String: Child] = [:]
            for gw in ["gw-lobby", "gw-lab", "gw-kitchen"] {
                let config = simDir.appendingPathComponent("\(gw).gateway-config.yaml").path
                #expect(try String(contentsOfFile: config, encoding: .utf8).contains("owner_lease_s: 15"))
                gateways[gw] = try Child(
                    bin,
                    [
                        "run", "--gateway-id", gw, "--device", "unix:\(simDir.path)/\(gw).sock",
                        "--broker", gw == "gw-lab" ? "mqtt://127.0.0.1:\(relay.port)" : broker.url,
                        "--prefix", "own", "--config", config,
                        "--spool", root.appendingPathComponent("\(gw).sqlite").path,
                    ],
                    log: root.appendingPathComponent("\(gw).log").path)
            }
            defer { for g in gateways.values { _ = g.stop() } }

            // 1. Every sensor connected, by one gateway each.
            let settled = try await until(45) {
                let h = collector.holders
                return Self.sensors.allSatisfy { h[$0]?.count == 1 }
            }
            #expect(settled, "not every sensor had one owner: \(collector.holders)")
            let kitchenOwned = Self.sensors.filter { collector.holders[$0] == ["gw-kitchen"] }
            #expect(!kitchenOwned.isEmpty, "the kitchen's gateway owns nothing to take over: \(collector.holders)")

            // 2. The kitchen's gateway dies: the broker sends its last will, but it might only be cut off and still
            // hold its links, so its claims stand until their lease runs out (at most the lease after the kill, the
            // last renewal having come before it); then the best hearer claims (0.1 s per dB below −40 dBm), settles
            // (2 s) and connects: within the lease + 10 s.
            _ = gateways["gw-kitchen"]!.stop(SIGKILL)
            let killed = Date().timeIntervalSince1970
            collector.kill("gw-kitchen", at: killed)
            let retaken = try await until(Self.lease + 15) {
                let h = collector.holders
                return kitchenOwned.allSatisfy { h[$0]?.count == 1 }
            }
            #expect(retaken, "after the kill: \(collector.holders)")
            for a in kitchenOwned {
                let back = collector.all.filter {
                    $0.address == a && $0.state == "connected" && $0.gateway != "gw-kitchen" && $0.ts > killed
                }
                .map(\.ts).min()
                #expect(
                    (back ?? .infinity) - killed <= Self.lease + 10,
                    "\(a) connected again \((back ?? .infinity) - killed) s after the kill")
            }

            // 3. The lab's controller loses power (75 s into the simulation): its sensors move, within the bound. The
            // lab's recovery ladder gives its links up (about 11 s here: an unanswered command, two controller resets)
            // and releases its claims; the lobby then claims, settles and connects: within the lease + 10 s.
            let labOwned = Self.sensors.filter { collector.holders[$0] == ["gw-lab"] }
            #expect(!labOwned.isEmpty, "the lab's gateway owns nothing to move: \(collector.holders)")
            var moved = labOwned.isEmpty
            let powerOff = started.timeIntervalSince1970 + 75
            try await Task.sleep(for: .seconds(max(0, powerOff - Date().timeIntervalSince1970)))
            if !labOwned.isEmpty {
                moved = try await until(Self.lease + 15) {
                    let h = collector.holders
                    return labOwned.allSatisfy { h[$0] == ["gw-lobby"] }
                }
                #expect(moved, "after the lab's power loss: \(collector.holders)")
                for a in labOwned {
                    let back = collector.all.filter {
                        $0.address == a && $0.state == "connected" && $0.gateway == "gw-lobby" && $0.ts > powerOff
                    }
                    .map(\.ts).min()
                    #expect(
                        (back ?? .infinity) - powerOff <= Self.lease + 10,
                        "\(a) connected again \((back ?? .infinity) - powerOff) s after")
                }
            }

            // 4. The lobby's sensor is carried into the lab: the lab's gateway, hearing it better by the margin for the
            // dwell, takes it over from the lobby's (the link never drops: the simulated radio reaches about 70 m) and
            // connects once the lease on the lobby's last claim has run out (the lobby might be cut off and unable to
            // yield): within the dwell + the lease + 5 s of its arrival.
            let leaves = started.timeIntervalSince1970 + Self.walkStart
            try await Task.sleep(for: .seconds(max(0, leaves - Date().timeIntervalSince1970)))
            #expect(collector.holders[Self.walker] == ["gw-lobby"], "before the walk: \(collector.holders)")
            let arrives = started.timeIntervalSince1970 + Self.walkArrival
            let handedOver = try await until(
                max(0, arrives - Date().timeIntervalSince1970) + Self.dwell + Self.lease + 10
            ) {
                collector.holders[Self.walker] == ["gw-lab"]
            }
            #expect(handedOver, "after the walk into the lab: \(collector.holders)")
            let byLab = collector.all.filter {
                $0.address == Self.walker && $0.state == "connected" && $0.gateway == "gw-lab" && $0.ts > leaves
            }
            .map(\.ts).min()
            #expect(
                (byLab ?? .infinity) - arrives <= Self.dwell + Self.lease + 5,
                "the lab connected it \((byLab ?? .infinity) - arrives) s after it arrived")
            // The lobby let it go when the lab's claim came; the lab connected when the lobby's lease on its last
            // claim (renewed every third of the lease) ran out: unconnected for at most the lease and the settle wait.
            let letGo = collector.all.filter {
                $0.address == Self.walker && $0.state != "connected" && $0.gateway == "gw-lobby" && $0.ts > leaves
            }
            .map(\.ts).min()
            if let letGo, let byLab {
                #expect(byLab - letGo <= Self.lease + 3, "unconnected for \(byLab - letGo) s during the handover")
            }
            try await Task.sleep(for: .seconds(5))

            // 6. The lab's network to the broker stalls for 4 s, less than its fence (0.75 of the lease): neither end
            // notices (keepalive 30 s), nothing is renewed meanwhile, and nothing changes: the lab keeps its links.
            let labHeld = Self.sensors.filter { collector.holders[$0] == ["gw-lab"] }
            #expect(!labHeld.isEmpty, "the lab's gateway owns nothing: \(collector.holders)")
            let blip = Date().timeIntervalSince1970
            relay.stall()
            try await Task.sleep(for: .seconds(4))
            relay.resume()
            try await Task.sleep(for: .seconds(8))
            let blipEnd = Date().timeIntervalSince1970
            #expect(
                labHeld.allSatisfy { collector.holders[$0] == ["gw-lab"] },
                "after a 4 s stall: \(collector.holders)")

            // 7. It stalls for 25 s, longer than the lease: the lab lets its sensors go at its fence, before the lobby's
            // lease on its last claim runs out; the lobby then takes them. When the network comes back, the renewals the
            // lab wrote into the stall arrive late with an older epoch: nothing moves back.
            let partition = Date().timeIntervalSince1970
            relay.stall()
            // (The lab's own reports wait in the stalled network: the observer hears that it let go only afterwards.)
            let takenOver = try await until(25) {
                let h = collector.holders
                return labHeld.allSatisfy { h[$0]?.contains("gw-lobby") == true }
            }
            #expect(takenOver, "during the partition: \(collector.holders)")
            try await Task.sleep(for: .seconds(max(0, partition + 25 - Date().timeIntervalSince1970)))
            relay.resume()
            try await Task.sleep(for: .seconds(10))
            #expect(
                labHeld.allSatisfy { collector.holders[$0] == ["gw-lobby"] },
                "after the partition: \(collector.holders)")
            let labLog = (try? String(contentsOfFile: gateways["gw-lab"]!.log, encoding: .utf8)) ?? ""
            #expect(labLog.contains("has echoed none of this gateway's claims"), "the lab never fenced")

            // 5. At no moment two links to one sensor: each gateway's connected intervals, by its own timestamps.
            let events = collector.all
            var clean = settled && retaken && moved && handedOver && takenOver
            for a in Self.sensors {
                var open: [String: Double] = [:]
                var overlaps: [String] = []
                for e in events where e.address == a {
                    if e.state == "connected" {
                        if let other = open.keys.first(where: { $0 != e.gateway }) {
                            overlaps.append("\(e.gateway) while \(other) at \(e.ts)")
                        }
                        open[e.gateway] = e.ts
                    } else {
                        open[e.gateway] = nil
                    }
                }
                #expect(overlaps.isEmpty, "\(a): two links at once: \(overlaps)")
                clean = clean && overlaps.isEmpty
            }
            // 8. And by the simulator's link table: its ground truth, flushed when it stops, in virtual seconds since its
            // start. Never two controllers linked to one sensor; the lab's links were not dropped by the short stall
            // and were dropped before the lobby's were made in the long one.
            sim.stop(SIGTERM)
            let origin = started.timeIntervalSince1970
            var linked: [String: Set<String>] = [:]
            var linkOverlaps: [String] = []
            var labDownInBlip: [String] = []
            var lineCount = 0
            for line in (try String(contentsOf: truth, encoding: .utf8)).split(separator: "\n")
            where line.contains(#""type":"link""#) {
                guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let t = o["t"] as? Double, let gw = o["gateway"] as? String, let peer = o["peer"] as? String,
                    let phase = o["phase"] as? String
                else { continue }
                lineCount += 1
                let sensor = peer.replacingOccurrences(of: ":", with: "").lowercased()
                // The killed gateway's controller keeps its links: a controller holds a link until a host ends it,
                // resets the controller (a restarted gateway does at bring-up) or the peer leaves its range, and no
                // host is left to do either. Nothing reads them; from the kill they are not the kitchen's links.
                if origin + t >= killed { for s in linked.keys { linked[s]?.remove("gw-kitchen") } }
                if phase == "up" {
                    if let other = linked[sensor]?.first {
                        linkOverlaps.append("\(sensor): \(gw) while \(other) at \(t)")
                    }
                    linked[sensor, default: []].insert(gw)
                } else {
                    linked[sensor]?.remove(gw)
                    // The simulator's clock and the test's differ by its start-up: a second of slack.
                    if gw == "gw-lab", origin + t > blip - 1, origin + t < blipEnd + 1 { labDownInBlip.append(sensor) }
                }
            }
            #expect(lineCount >= 10, "the simulator's truth has \(lineCount) link lines")
            #expect(linkOverlaps.isEmpty, "two links at once in the simulator's link table: \(linkOverlaps)")
            #expect(labDownInBlip.isEmpty, "the lab dropped links during the short stall: \(labDownInBlip)")
            clean = clean && linkOverlaps.isEmpty && labDownInBlip.isEmpty

            // Logs kept when something failed.
            if clean { try? FileManager.default.removeItem(at: root) }
        }
    }
}
