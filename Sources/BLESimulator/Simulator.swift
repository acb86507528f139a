import BLEHCI
import BLETransport
import Foundation

/// How to run a scenario.
public struct SimulatorOptions: Sendable {
    public enum Speed: Sendable, Hashable {
        /// Virtual seconds per real second (1 = real time).
        case factor(Double)
        /// No pacing at all (benchmarks); see `FreeRunningClock`.
        case max
    }

    /// Where `<gateway-id>.sock`, `clock.json` and `gateway-config.yaml` go.
    public var socketDirectory: String
    public var speed: Speed = .factor(1)
    /// Seeds every random draw (advDelay, loss, shadowing); the same seed gives the same air.
    public var seed: UInt64 = 1
    /// JSON-lines ground truth, or nil for none.
    public var truthPath: String?
    /// Virtual seconds to run; nil: the scenario's `duration_s`, or until cancelled.
    public var duration: Double?

    public init(socketDirectory: String) { self.socketDirectory = socketDirectory }
}

/// The virtual radio as a service: one virtual controller per gateway of the scenario, each an H4
/// byte-stream server on `DIR/<gateway-id>.sock`, and the air between them and the scenario's
/// advertisers. `init` binds the sockets and starts answering commands (hosts may connect as soon
/// as it returns); `run()` drives virtual time until the duration ends or the task is cancelled,
/// then closes and removes the sockets (so does releasing a simulator that never ran).
public final class Simulator: Sendable {
    public let scenario: Scenario
    public let options: SimulatorOptions
    public let clock: any BLEClock
    public let pacing: Pacing
    public let nodes: [GatewayNode]
    private let plugs: [PlugSwitch]

    /// Convenience: the clock and pacing follow `options.speed` (a `ScaledClock` from now, or a
    /// `FreeRunningClock` for `.max`).
    public convenience init(scenario: Scenario, options: SimulatorOptions) throws {
        switch options.speed {
        case .max:
            try self.init(scenario: scenario, options: options, clock: FreeRunningClock(), pacing: .asFastAsPossible)
        case .factor(let f):
            // Wake about every 2 ms of real time: reports leave in small bursts, as from a controller's buffer.
            try self.init(
                scenario: scenario, options: options, clock: ScaledClock(factor: f),
                pacing: .clock(batch: .microseconds(Int64(2000 * f))))
        }
    }

    /// With an injected clock (tests pass a `ManualClock` and `.clock(batch: .zero)`).
    public init(scenario: Scenario, options: SimulatorOptions, clock: any BLEClock, pacing: Pacing) throws {
        self.scenario = scenario
        self.options = options
        self.clock = clock
        self.pacing = pacing
        try FileManager.default.createDirectory(atPath: options.socketDirectory, withIntermediateDirectories: true)
        nodes = scenario.gateways.map { GatewayNode(spec: $0, clock: clock) }
        var plugs: [PlugSwitch] = []
        for node in nodes {
            let path = (options.socketDirectory as NSString).appendingPathComponent("\(node.spec.id).sock")
            plugs.append(try PlugSwitch(path: path, node: node))
        }
        self.plugs = plugs
        // Controllers answer commands from here on, whether or not the air is running yet: a
        // host's bring-up does not wait for virtual time.
        for plug in plugs {
            let t = Thread { plug.serve() }
            t.name = "sim-accept"
            t.start()
        }
        try writeClockFile()
        if let yaml = scenario.gatewayConfigYAML {
            let path = (options.socketDirectory as NSString).appendingPathComponent("gateway-config.yaml")
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        }
        for (id, yaml) in scenario.gatewayConfigYAMLByGateway {
            try yaml.write(toFile: gatewayConfigPath(for: id), atomically: true, encoding: .utf8)
        }
        if let yaml = scenario.siteYAML {
            try yaml.write(toFile: sitePath, atomically: true, encoding: .utf8)
        }
    }

    /// DIR/site.yaml: the scenario's site description with its gateways placed (docs/PRESENCE.md).
    public var sitePath: String { (options.socketDirectory as NSString).appendingPathComponent("site.yaml") }

    deinit { for plug in plugs { plug.stop() } }

    /// DIR/<gateway-id>.gateway-config.yaml: the configuration that gateway runs with (the scenario's
    /// `gateway_config:` with the gateway's own merged over it).
    public func gatewayConfigPath(for gatewayID: String) -> String {
        (options.socketDirectory as NSString).appendingPathComponent("\(gatewayID).gateway-config.yaml")
    }

    public func socketPath(for gatewayID: String) -> String {
        (options.socketDirectory as NSString).appendingPathComponent("\(gatewayID).sock")
    }

    /// DIR/clock.json: what a gateway process needs to build the same `ScaledClock`.
    private func writeClockFile() throws {
        let json: String
        if let c = clock as? ScaledClock {
            // Virtual zero was `now / factor` real seconds ago.
            let origin = Date().timeIntervalSince1970 - c.now().seconds / c.factor
            json = "{\"real_origin_unix\": \(origin), \"factor\": \(c.factor)}"
        } else {
            // Free-running or manual time cannot be followed from another process.
            json = "{\"real_origin_unix\": \(Date().timeIntervalSince1970), \"factor\": null, \"free_running\": true}"
        }
        let path = (options.socketDirectory as NSString).appendingPathComponent("clock.json")
        try (json + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    public func run() async throws {
        let truth = try options.truthPath.map { try GroundTruthWriter(path: $0) }
        defer {
            for plug in plugs { plug.stop() }
            truth?.close()
        }

        let emitterByAddress = Dictionary(
            scenario.emitters.enumerated().map { ($1.address, $0) }, uniquingKeysWith: { first, _ in first })
        var engine = RadioEngine(scenario: scenario, random: SimRandom(seed: options.seed), nodes: nodes)
        let timeline = FaultTimeline(scenario: scenario)
        var nextFault = 0
        var nextTruth = 0.0
        // Each controller's links as last written to the truth (peers by address).
        var linkTable = [Set<BDAddress>](repeating: [], count: nodes.count)
        let end = options.duration ?? scenario.duration ?? .infinity
        let batch: Double
        let freeRunning: Bool
        switch pacing {
        case .clock(let b): (batch, freeRunning) = (b.seconds, false)
        case .asFastAsPossible: (batch, freeRunning) = (0.010, true)
        }

        while true {
            try Task.checkCancellation()
            if freeRunning && !nodes.contains(where: { $0.isConnected }) {
                try await Task.sleep(nanoseconds: 1_000_000)
                continue
            }
            let now = clock.now().seconds
            while nextFault < timeline.steps.count, timeline.steps[nextFault].t <= min(now, end) {
                let s = timeline.steps[nextFault]
                if s.kind == .peripheralOff, let peer = s.peer, let i = emitterByAddress[peer] {
                    engine.setPowered(emitter: i, !s.start)
                }
                apply(s, plug: plugs[s.gateway])
                truth?.fault(
                    t: s.t, gateway: scenario.gateways[s.gateway].id, fault: s.kind.rawValue,
                    phase: s.start ? "start" : "end")
                nextFault += 1
            }
            if let truth {
                while nextTruth <= min(now, end) {
                    writeTruth(truth, at: nextTruth)
                    nextTruth += scenario.truthInterval
                }
            }
            if now >= end { break }
            let listening = nodes.map { $0.listening() }
            for (g, l) in listening.enumerated() where l.scan.enabled && l.scan.period == nil {
                if let d = l.scan.duration, now - l.scan.startedAt.seconds >= d.seconds {
                    nodes[g].scanTimedOut(generation: l.scan.generation)
                }
            }
            _ = engine.advance(until: min(now, end), listening: listening)
            // Looked at again: the radio may just have made (or started failing) a connection.
            let linked = nodes.map { $0.listening() }
            for (g, l) in linked.enumerated() where l.hasConnections {
                let gw = scenario.gateways[g]
                nodes[g].connectionTick(now: now) { peer in
                    guard let i = emitterByAddress[peer], !engine.unpowered.contains(i) else { return nil }
                    let e = scenario.emitters[i]
                    let d = e.motion.position(at: now).distance(to: gw.position)
                    let k = UInt64(now * 10)
                    let r =
                        scenario.radio.meanRSSI(rssiAt1m: e.rssiAt1m, distance: d)
                        + scenario.radio.shadowingSigmaDB
                        * SimRandom(seed: options.seed).gaussian(RandomStream.link, UInt64(i) << 8 | UInt64(g), k)
                        + (scenario.radio.linkOffsets[gw.id]?[e.name] ?? 0) + gw.rxOffsetDB
                    return r >= scenario.radio.sensitivityDBm ? r : nil
                }
            }
            if let truth { recordLinks(truth, at: now, table: &linkTable) }
            for g in nodes.indices {
                while !engine.flush(g, dropIfFull: !freeRunning) {
                    try await Task.sleep(nanoseconds: 200_000)
                }
            }
            var next = min(engine.nextEventTime, end)
            if truth != nil { next = min(next, nextTruth) }
            if nextFault < timeline.steps.count { next = min(next, timeline.steps[nextFault].t) }
            for l in linked { if let due = l.connectionFailsAt, due > now { next = min(next, due) } }
            // Links wake the loop for their notifications, indications and database changes.
            for l in linked { if let due = l.linkDue, due > now { next = min(next, due) } }
            // Nothing scheduled (no advertisers, no end): look again in a minute of virtual time.
            next = min(next, now + 60)
            try await clock.sleep(until: .seconds(max(next, now + batch)))
        }
    }

    private func apply(_ s: FaultTimeline.Step, plug: PlugSwitch) {
        let node = nodes[s.gateway]
        switch (s.kind, s.start) {
        case (.powerOff, true): node.powerOff(hardwareError: nil)
        case (.hardwareError, true): node.powerOff(hardwareError: s.hardwareCode)
        case (.powerOff, false), (.hardwareError, false): node.powerOn()
        case (.unplug, true): plug.setPlugged(false)
        case (.unplug, false): plug.setPlugged(true)
        case (.silence, let on): node.setSilenced(on)
        case (.connectionFailure, let on): node.setConnectionFailure(on)
        case (.bufferExhaustion, let on): node.setBufferExhaustion(on)
        case (.gattSilence, let on): node.setGATTSilence(on, peer: s.peer)
        case (.peripheralOff, _): break  // the radio engine's (see the run loop)
        case (.commandErrors, let on): node.setCommandErrors(on ? SimStatus(rawValue: s.status) : nil)
        case (.leUnsupported, let on): node.setLEUnsupported(on)
        }
    }

    /// Links that began or ended since the last look, from each controller's link table. A link the host ended by a
    /// command is seen at the loop's next turn (milliseconds later in virtual time).
    private func recordLinks(_ truth: GroundTruthWriter, at t: Double, table: inout [Set<BDAddress>]) {
        for (g, node) in nodes.enumerated() {
            let now = Set(node.links.map(\.peer))
            guard now != table[g] else { continue }
            let id = scenario.gateways[g].id
            for peer in table[g].subtracting(now).sorted(by: { $0.rawValue < $1.rawValue }) {
                truth.link(t: t, gateway: id, peer: peer.description, phase: "down")
            }
            for peer in now.subtracting(table[g]).sorted(by: { $0.rawValue < $1.rawValue }) {
                truth.link(t: t, gateway: id, peer: peer.description, phase: "up")
            }
            table[g] = now
        }
    }

    private func writeTruth(_ truth: GroundTruthWriter, at t: Double) {
        for e in scenario.emitters {
            let p = e.motion.position(at: t)
            truth.position(t: t, emitter: e, at: p)
            let id = e.beaconID
            for g in scenario.gateways {
                truth.distance(t: t, gateway: g.id, beacon: id, distance: p.distance(to: g.position))
            }
        }
    }
}

/// The scenario's faults as start/end steps in time order.
struct FaultTimeline {
    struct Step {
        var t: Double
        var gateway: Int
        var kind: FaultSpec.Kind
        var start: Bool
        var hardwareCode: UInt8
        /// `command_errors`: the status commands are refused with.
        var status: UInt8 = 0x03
        /// `gatt_silence` for one peripheral: its address.
        var peer: BDAddress?
    }
    var steps: [Step] = []

    init(scenario: Scenario) {
        let index = Dictionary(uniqueKeysWithValues: scenario.gateways.enumerated().map { ($1.id, $0) })
        for f in scenario.faults {
            guard let g = index[f.gateway] else { continue }
            let peer = f.peripheral.flatMap { name in scenario.emitters.first { $0.name == name }?.address }
            steps.append(
                Step(
                    t: f.at, gateway: g, kind: f.kind, start: true, hardwareCode: f.hardwareCode,
                    status: f.status, peer: peer))
            if let d = f.duration {
                steps.append(
                    Step(
                        t: f.at + d, gateway: g, kind: f.kind, start: false, hardwareCode: f.hardwareCode,
                        status: f.status, peer: peer))
            }
        }
        steps.sort { ($0.t, $0.start ? 1 : 0) < ($1.t, $1.start ? 1 : 0) }
    }
}

/// A gateway's socket as a USB plug: bound while plugged in, absent while unplugged. Its thread owns the listener,
/// accepts hosts (a new host replaces the previous one) and follows the plug's position, which the fault timeline
/// sets from the radio's loop. The thread blocks in poll(2) on the listener and a self-pipe, so a change of position
/// wakes it at once and nothing is polled on a timer.
final class PlugSwitch: Sendable {
    /// Where the timeline has put the plug; the thread makes the socket match.
    enum Position { case pluggedIn, pulledOut, stopped }

    let path: String
    let node: GatewayNode
    private let position = Locked(Position.pluggedIn)
    /// Written once per change of position, read by the thread's poll; non-blocking, so changes the thread has not
    /// read yet never stall the timeline (one unread byte is enough to wake it).
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    /// Bound in `init` (a bad path is the simulator's error), then the thread's until it ends.
    private let firstListener: UnixListener

    init(path: String, node: GatewayNode) throws {
        var p: [Int32] = [-1, -1]
        guard pipe(&p) == 0 else { throw TransportError.fromErrno(errno, "pipe") }
        for fd in p {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        do {
            firstListener = try UnixListener(path: path)
        } catch {
            Glibc.close(p[0])
            Glibc.close(p[1])
            throw error
        }
        self.path = path
        self.node = node
        wakeRead = p[0]
        wakeWrite = p[1]
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    func setPlugged(_ on: Bool) {
        move(to: on ? .pluggedIn : .pulledOut)
        // A dongle pulled out loses its power with its host: its links end (the peers' supervision timeouts) and it
        // comes back from power-on defaults.
        if on {
            node.powerOn()
        } else {
            node.detach()
            node.powerOff(hardwareError: nil)
        }
    }

    /// Stops serving and waits until the thread has closed and removed the socket. Safe to call more than once.
    func stop() {
        if move(to: .stopped) { finished.wait() }
    }

    /// Returns false when the plug had already stopped (a stopped plug stays stopped).
    @discardableResult
    private func move(to p: Position) -> Bool {
        let moved = position.withLock { current -> Bool in
            guard current != .stopped else { return false }
            current = p
            return true
        }
        if moved {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        return moved
    }

    /// The accept loop, on its own thread; returns after `stop()`, with the socket closed and removed.
    func serve() {
        var listener: UnixListener? = firstListener
        serving: while true {
            switch position.withLock({ $0 }) {
            case .stopped:
                break serving
            case .pulledOut:
                listener?.close()
                listener = nil
            case .pluggedIn where listener == nil:
                // The path is ours (UnixListener removes what is there); a bind that still fails leaves the plug
                // out until the timeline moves it again, said on stderr.
                do { listener = try UnixListener(path: path) } catch {
                    FileHandle.standardError.write(Data("simulator: cannot plug \(path) back in: \(error)\n".utf8))
                }
            case .pluggedIn:
                break
            }
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if let l = listener { fds.append(pollfd(fd: l.fd, events: Int16(POLLIN), revents: 0)) }
            guard poll(&fds, nfds_t(fds.count), -1) > 0 else { continue }  // EINTR
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = read(wakeRead, &drain, drain.count)
                continue  // the position first: a host that arrives as the plug is pulled is not taken
            }
            if fds.count > 1, fds[1].revents != 0, let l = listener {
                let fd = accept(l.fd, nil, nil)
                if fd >= 0 { node.attach(fd: fd) }
            }
        }
        listener?.close()
        node.detach()
        finished.signal()
    }
}
