import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Foundation
import Glibc
import Testing

@testable import BLEHost

/// LE Connection Complete (Core v5.4, Vol 4, Part E, §7.7.65.1): status 0, handle 0x0040, central, public peer
/// 00:1B:DC:10:00:01, interval 0x0028, latency 0, timeout 0x002A, clock accuracy 0.
let connectionComplete0x40: [UInt8] = [
    0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0xDC, 0x1B, 0x00, 0x28, 0x00, 0x00, 0x00,
    0x2A, 0x00, 0x00,
]

/// A running `LELinks` over a scripted controller: literal H4 bytes out, literal bytes in.
final class ScriptedLinks {
    let transport: ScriptedHCITransport
    let controller: HCIController
    let links: LELinks
    let runner: Task<Void, any Error>
    let running: Task<Void, Never>

    init(buffers: (length: Int, count: Int), script: [ScriptedHCITransport.Exchange]) async {
        transport = ScriptedHCITransport(script: script)
        controller = HCIController(transport: transport, clock: ManualClock())
        let c = controller
        runner = Task { try await c.run() }
        links = LELinks(controller: controller, buffers: buffers)
        let l = links
        running = Task { await l.run() }
        transport.inject(connectionComplete0x40)
        _ = await eventually { l.statistics.openLinks == 1 }
    }

    func stop() async {
        running.cancel()
        await running.value
        runner.cancel()
        _ = await runner.result
    }
}

/// The links service between HCI ACL packets and ATT PDUs, against literal controller bytes.
@Suite struct LELinksScriptedTests {
    @Test func anATTPDUGoesOutAsOneACLPacketAndTheAnswerArrivesOnTheBearer() async throws {
        let s = await ScriptedLinks(
            buffers: (27, 2),
            script: [
                // Exchange MTU Request (client 247) on CID 0x0004, PB 0b00 → credit back, then the response (PB 0b10).
                .init(
                    [0x02, 0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00],
                    [
                        [0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00],
                        [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7, 0x00],
                    ])
            ])
        let bearer = s.links.bearer(for: 0x0040)
        #expect(s.links.bearer(for: 0x0040) === bearer)
        try bearer.send([0x02, 0xF7, 0x00])
        var incoming = bearer.incoming.makeAsyncIterator()
        #expect(await incoming.next() == [0x03, 0xF7, 0x00])
        #expect(await eventually { s.links.statistics.inFlight == 0 })
        #expect(s.transport.mismatches.isEmpty && s.transport.remaining == 0)
        let stats = s.links.statistics
        #expect(stats.attPDUsSent == 1 && stats.attPDUsReceived == 1 && stats.linksOpened == 1)
        await s.stop()
    }

    @Test func pdusAreFragmentedToTheBufferLengthAndWaitForCredit() async throws {
        let s = await ScriptedLinks(
            buffers: (8, 2),
            script: [
                // Write Request CCCD 0x0007 = 0x0001: a 9-octet frame in 8 + 1; the two buffers are taken.
                .init([0x02, 0x40, 0x00, 0x08, 0x00, 0x05, 0x00, 0x04, 0x00, 0x12, 0x07, 0x00, 0x01], []),
                .init([0x02, 0x40, 0x10, 0x01, 0x00, 0x00], []),
                // After Number Of Completed Packets (2): the two Read Requests that waited.
                .init([0x02, 0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00], []),
                .init([0x02, 0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x06, 0x00], []),
            ])
        let bearer = s.links.bearer(for: 0x0040)
        try bearer.send([0x12, 0x07, 0x00, 0x01, 0x00])
        try bearer.send([0x0A, 0x03, 0x00])
        try bearer.send([0x0A, 0x06, 0x00])
        #expect(s.transport.sent.count == 2)
        var stats = s.links.statistics
        #expect(stats.inFlight == 2 && stats.queued == 2 && stats.scheduler.stalls == 1)
        s.transport.inject([0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x02, 0x00])
        #expect(await eventually { s.transport.sent.count == 4 })
        stats = s.links.statistics
        #expect(stats.maxInFlight == 2 && stats.queued == 0)
        #expect(s.transport.mismatches.isEmpty)
        await s.stop()
    }

    @Test func signalingAndSMPAreAnsweredAndOtherChannelsDropped() async throws {
        let s = await ScriptedLinks(
            buffers: (27, 8),
            script: [
                // Connection Parameter Update Response, identifier 1, accepted...
                .init([0x02, 0x40, 0x00, 0x0A, 0x00, 0x06, 0x00, 0x05, 0x00, 0x13, 0x01, 0x02, 0x00, 0x00, 0x00], []),
                // ...then HCI LE Connection Update with the requested 0x0018–0x0028, latency 0, timeout 0x01F4.
                .init(
                    [
                        0x01, 0x13, 0x20, 0x0E, 0x40, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00,
                        0x00, 0x00,
                    ],
                    [
                        [0x04, 0x0F, 0x04, 0x00, 0x01, 0x13, 0x20],
                        [0x04, 0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01],
                    ]),
                // Pairing Failed, Pairing Not Supported, on CID 0x0006.
                .init([0x02, 0x40, 0x00, 0x06, 0x00, 0x02, 0x00, 0x06, 0x00, 0x05, 0x05], []),
                // Command Reject, Command not understood, for the reserved signaling code.
                .init([0x02, 0x40, 0x00, 0x0A, 0x00, 0x06, 0x00, 0x05, 0x00, 0x01, 0x09, 0x02, 0x00, 0x00, 0x00], []),
            ])
        s.transport.inject([
            0x02, 0x40, 0x20, 0x10, 0x00, 0x0C, 0x00, 0x05, 0x00,
            0x12, 0x01, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01,
        ])
        #expect(await eventually { s.transport.remaining == 2 })
        s.transport.inject([
            0x02, 0x40, 0x20, 0x0B, 0x00, 0x07, 0x00, 0x06, 0x00,
            0x01, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07,
        ])
        #expect(await eventually { s.transport.remaining == 1 })
        // A frame on dynamic CID 0x0040, which this host never opened.
        s.transport.inject([0x02, 0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x40, 0x00, 0xFF])
        s.transport.inject([0x02, 0x40, 0x20, 0x08, 0x00, 0x04, 0x00, 0x05, 0x00, 0x7F, 0x09, 0x00, 0x00])
        #expect(await eventually { s.transport.remaining == 0 })
        let stats = s.links.statistics
        #expect(stats.unknownChannelFrames == 1)
        #expect(stats.signaling.parameterUpdatesAccepted == 1 && stats.signaling.commandsRejected == 1)
        #expect(stats.smp.refused == 1 && stats.commandFailures == 0)
        #expect(s.transport.mismatches.isEmpty)
        await s.stop()
    }

    @Test func theLinkLayerParameterRequestIsAnsweredWithReplyOrNegativeReply() async throws {
        let s = await ScriptedLinks(
            buffers: (27, 8),
            script: [
                // LE Remote Connection Parameter Request Reply: the requested 0x0018–0x0028, 0, 0x01F4, CE lengths 0.
                .init(
                    [
                        0x01, 0x20, 0x20, 0x0E, 0x40, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00,
                        0x00, 0x00,
                    ], [[0x04, 0x0E, 0x06, 0x01, 0x20, 0x20, 0x00, 0x40, 0x00]]),
                // Negative Reply, 0x3B Unacceptable Connection Parameters.
                .init(
                    [0x01, 0x21, 0x20, 0x03, 0x40, 0x00, 0x3B],
                    [[0x04, 0x0E, 0x06, 0x01, 0x21, 0x20, 0x00, 0x40, 0x00]]),
            ])
        // §7.7.65.6: subevent 0x06, handle 0x0040, interval 0x0018–0x0028, latency 0, timeout 0x01F4.
        s.transport.inject([0x04, 0x3E, 0x0B, 0x06, 0x40, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
        #expect(await eventually { s.transport.remaining == 1 })
        // Interval min 0x0002: below 6.
        s.transport.inject([0x04, 0x3E, 0x0B, 0x06, 0x40, 0x00, 0x02, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
        #expect(await eventually { s.transport.remaining == 0 })
        #expect(await eventually { s.links.statistics.remoteParameterRequestsRejected == 1 })
        let stats = s.links.statistics
        #expect(stats.remoteParameterRequestsAccepted == 1 && stats.commandFailures == 0)
        #expect(s.transport.mismatches.isEmpty)
        await s.stop()
    }

    @Test func dropDisconnectsAndDisconnectionCompleteFinishesTheBearerAndReturnsCredit() async throws {
        let s = await ScriptedLinks(
            buffers: (27, 1),
            script: [
                .init([0x02, 0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00], []),
                // HCI Disconnect, reason 0x13 → Command Status, then Disconnection Complete reason 0x16.
                .init(
                    [0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13],
                    [
                        [0x04, 0x0F, 0x04, 0x00, 0x01, 0x06, 0x04],
                        [0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x16],
                    ]),
            ])
        let bearer = s.links.bearer(for: 0x0040)
        try bearer.send([0x0A, 0x03, 0x00])
        try bearer.send([0x0A, 0x06, 0x00])  // waits: the one buffer is taken
        bearer.drop()
        #expect(throws: LELinkError(code: .linkClosed, handle: 0x0040)) { try bearer.send([0x0A, 0x09, 0x00]) }
        for await _ in bearer.incoming {}
        let stats = s.links.statistics
        #expect(stats.openLinks == 0 && stats.linksClosed == 1)
        #expect(stats.scheduler.droppedOnDisconnect == 1 && stats.scheduler.creditsReclaimed == 1)
        #expect(stats.inFlight == 0 && stats.queued == 0)
        #expect(s.transport.mismatches.isEmpty && s.transport.remaining == 0)
        await s.stop()
    }

    @Test func attThatArrivesBeforeAnyoneAsksForTheBearerWaitsInIt() async throws {
        let s = await ScriptedLinks(buffers: (27, 8), script: [])
        // A Handle Value Notification (Temperature 0x0006 = 21.50 °C) right after LE Connection Complete.
        s.transport.inject([0x02, 0x40, 0x20, 0x09, 0x00, 0x05, 0x00, 0x04, 0x00, 0x1B, 0x06, 0x00, 0x66, 0x08])
        #expect(await eventually { s.links.statistics.attPDUsReceived == 1 })
        var incoming = s.links.bearer(for: 0x0040).incoming.makeAsyncIterator()
        #expect(await incoming.next() == [0x1B, 0x06, 0x00, 0x66, 0x08])
        await s.stop()
    }

    @Test func aBearerAskedForBeforeTheLinksSeeTheConnectionIsTheLinksBearer() async throws {
        let s = await ScriptedLinks(buffers: (27, 8), script: [])
        let early = s.links.bearer(for: 0x0041)
        // LE Connection Complete for handle 0x0041 reaches the links' loop afterwards: the link is the same.
        var cc = connectionComplete0x40
        cc[5] = 0x41
        s.transport.inject(cc)
        s.transport.inject([0x02, 0x41, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x03, 0xF7, 0x00])
        var incoming = early.incoming.makeAsyncIterator()
        #expect(await incoming.next() == [0x03, 0xF7, 0x00])
        #expect(s.links.bearer(for: 0x0041) === early)
        #expect(s.links.statistics.linksOpened == 2)
        await s.stop()
    }

    @Test func aHandleReusedAfterDisconnectionGetsAFreshBearerAndTheOldOneStaysClosed() async throws {
        let s = await ScriptedLinks(
            buffers: (27, 8),
            script: [
                .init([0x02, 0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x02, 0xF7, 0x00], [])
            ])
        let old = s.links.bearer(for: 0x0040)
        // Disconnection Complete, reason 0x08 Connection Timeout; then the controller reuses 0x0040.
        s.transport.inject([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x08])
        for await _ in old.incoming {}
        s.transport.inject(connectionComplete0x40)
        #expect(await eventually { s.links.statistics.openLinks == 1 })
        let new = s.links.bearer(for: 0x0040)
        #expect(new !== old)
        #expect(throws: LELinkError(code: .linkClosed, handle: 0x0040)) { try old.send([0x02, 0xF7, 0x00]) }
        try new.send([0x02, 0xF7, 0x00])
        #expect(s.transport.remaining == 0 && s.transport.mismatches.isEmpty)
        await s.stop()
    }

    @Test func theEndOfTheTransportFinishesEveryBearerAndRunReturns() async throws {
        let s = await ScriptedLinks(buffers: (27, 4), script: [])
        let bearer = s.links.bearer(for: 0x0040)
        s.transport.end()
        for await _ in bearer.incoming {}
        await s.running.value
        #expect(throws: LELinkError.self) { try bearer.send([0x02, 0xF7, 0x00]) }
        let late = s.links.bearer(for: 0x0041)
        for await _ in late.incoming {}  // already finished
        #expect(throws: LELinkError.self) { try late.send([0x02, 0xF7, 0x00]) }
        _ = await s.runner.result
    }
}

/// `LELinks` end to end: an `HCIController` over the simulator's Unix socket, a simulated sensor peripheral and its
/// GATT server. The simulator runs on a `ManualClock` advanced by hand; the host's controller has a clock of its own
/// that never moves (its command timeouts cannot fire), so virtual time is only what the test says.
@Suite(.timeLimit(.minutes(1)))
struct LELinksSimulatorTests {
    static let yaml = """
        name: sensor
        radio: {loss_probability: 0, shadowing_sigma_db: 0}
        gateways: [{id: gw-a, position: [0, 0]}]
        peripherals:
          - {name: sensor-1, local_name: Thermo-1, address: "00:1B:DC:10:00:01", position: [3, 0], interval_ms: 100}
        """

    final class Rig {
        let clock = ManualClock()
        let directory = NSTemporaryDirectory() + "blehost-links-\(UUID().uuidString.prefix(8))"
        let simulator: Simulator
        let simulation: Task<Void, any Error>
        let controller: HCIController
        let runner: Task<Void, any Error>

        init(_ yaml: String) throws {
            signal(SIGPIPE, SIG_IGN)
            var options = SimulatorOptions(socketDirectory: directory)
            options.seed = 7
            simulator = try Simulator(
                scenario: try ScenarioLoader.parse(yaml), options: options, clock: clock,
                pacing: .clock(batch: .zero))
            let sim = simulator
            simulation = Task { try await sim.run() }
            let transport = try H4Stream.connectUnix(path: simulator.socketPath(for: "gw-a"))
            controller = HCIController(transport: transport, clock: ManualClock())
            let c = controller
            runner = Task { try await c.run() }
        }

        /// Runs virtual time forward a second at a time, letting the radio catch up after each step.
        func advance(seconds: Int) async {
            await settle()
            for _ in 0..<seconds {
                clock.advance(by: .seconds(1))
                await settle()
            }
        }

        /// Waits until the radio sleeps on the clock again (it has done all that is due).
        func settle() async {
            await clock.untilSleeping()
        }

        /// Connects to the sensor and returns the handle from LE (Enhanced) Connection Complete.
        func connect() async throws -> UInt16 {
            let events = controller.events()
            _ = try await controller.execute(
                LECreateConnectionCommand(
                    peerAddressType: .public, peerAddress: BDAddress("00:1B:DC:10:00:01")!))
            await advance(seconds: 1)
            for await e in events.ignoringErrors {
                if case .event(.leConnectionComplete(let cc)) = e {
                    #expect(cc.status.isSuccess)
                    return cc.handle
                }
            }
            throw CancellationError()
        }

        func stop() async {
            runner.cancel()
            _ = await runner.result
            simulation.cancel()
            _ = await simulation.result
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func anMTUExchangeAndAReadCrossTheSimulatedLinkAndDropEndsIt() async throws {
        let rig = try Rig(Self.yaml)
        let info = try await ControllerBringUp.run(rig.controller)
        #expect(info.leACLBuffers.length == 251 && info.leACLBuffers.count == 8)
        let links = LELinks(controller: rig.controller, buffers: info.leACLBuffers)
        let running = Task { await links.run() }
        let handle = try await rig.connect()
        let bearer = links.bearer(for: handle)
        var incoming = bearer.incoming.makeAsyncIterator()
        try bearer.send([0x02, 0xF7, 0x00])
        #expect(await incoming.next() == [0x03, 0xF7, 0x00])
        try bearer.send([0x0A, 0x03, 0x00])  // Read Request, the GAP Device Name value
        #expect(await incoming.next() == [0x0B] + Array("Thermo-1".utf8))
        bearer.drop()
        while await incoming.next() != nil {}
        #expect(throws: LELinkError.self) { try bearer.send([0x02, 0xF7, 0x00]) }
        let stats = links.statistics
        #expect(stats.linksOpened == 1 && stats.linksClosed == 1 && stats.openLinks == 0)
        #expect(stats.inFlight == 0 && stats.commandFailures == 0)
        #expect(rig.simulator.nodes[0].stats.hostFlowControlViolations == 0)
        running.cancel()
        await running.value
        await rig.stop()
    }

    @Test func withCreditsWithheldNoMoreThanTheBufferCountIsInFlightAndTheRestFollowsLater() async throws {
        let fault = "{at_s: 2, gateway: gw-a, type: buffer_exhaustion, duration_s: 2}"
        let rig = try Rig(Self.yaml + "\nfaults:\n  - \(fault)\n")
        let info = try await ControllerBringUp.run(rig.controller)
        let links = LELinks(controller: rig.controller, buffers: info.leACLBuffers)
        let running = Task { await links.run() }
        let handle = try await rig.connect()
        let bearer = links.bearer(for: handle)
        await rig.advance(seconds: 1)  // the fault starts at 2 s
        for _ in 0..<12 { try bearer.send([0x0A, 0x03, 0x00]) }
        let node = rig.simulator.nodes[0]
        #expect(await eventually { node.stats.aclPackets == 8 })
        var stats = links.statistics
        #expect(stats.inFlight == 8 && stats.queued == 4 && stats.scheduler.stalls == 1)
        await rig.advance(seconds: 2)  // the fault ends at 4 s: credits come back, the rest goes out
        var answers = 0
        for await pdu in bearer.incoming {
            #expect(pdu == [0x0B] + Array("Thermo-1".utf8))
            answers += 1
            if answers == 12 { break }
        }
        stats = links.statistics
        #expect(stats.maxInFlight == 8)
        #expect(node.stats.aclPackets == 12 && node.stats.hostFlowControlViolations == 0)
        running.cancel()
        await running.value
        await rig.stop()
    }
}
