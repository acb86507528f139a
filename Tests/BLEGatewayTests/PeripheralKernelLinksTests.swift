import BLEDomain
import BLEHCI
import BLEHost
import BLESimulator
import BLETransport
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// An `ATTBearer` answered by the simulator's GATT server in memory, standing in for a kernel L2CAP socket.
final class SimGATTBearer: ATTBearer, @unchecked Sendable {
    let incoming: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private let server = Locked(SimGATTServer(deviceName: "Sensor K", phase: 0))
    private let ended = Locked(false)

    init() { (incoming, continuation) = AsyncStream.makeStream(of: [UInt8].self) }

    func send(_ pdu: [UInt8]) throws {
        struct Gone: Error {}
        if ended.withLock({ $0 }) { throw Gone() }
        if let answer = server.withLock({ $0.handle(request: pdu, now: 1) }) { continuation.yield(answer) }
    }

    /// The notifications the peripheral would send now.
    func notify() { for pdu in server.withLock({ $0.notifications(at: 2) }) { continuation.yield(pdu) } }

    func drop() { end() }

    func end() {
        ended.withLock { $0 = true }
        continuation.finish()
    }
}

/// Link maker as the kernel's sockets behave, scripted: each connect takes the next outcome, a link ends with an
/// errno reason, ids are the service's own. No RSSI.
final class ScriptedKernelLinks: PeripheralLinkMaker, @unchecked Sendable {
    enum Outcome {
        case refuse(String)
        case succeed
    }
    let post: @Sendable (ConnectionManager.Event) -> Void
    private let state = Locked<(outcomes: [Outcome], links: [UInt16: SimGATTBearer], connects: Int, ids: LinkIDs)>(
        ([], [:], 0, LinkIDs()))
    private let (never, _) = AsyncStream.makeStream(of: Void.self)

    init(outcomes: [Outcome], post: @escaping @Sendable (ConnectionManager.Event) -> Void) {
        self.post = post
        state.withLock { $0.outcomes = outcomes }
    }

    var readsRSSI: Bool { false }
    var connects: Int { state.withLock { $0.connects } }
    var live: [UInt16: SimGATTBearer] { state.withLock { $0.links } }

    func run() async { for await _ in never {} }

    func connect(_ peer: ConnectionManager.Peer, parameters: LEConnectionParameters) async {
        let outcome = state.withLock { s -> Outcome in
            s.connects += 1
            return s.outcomes.isEmpty ? .succeed : s.outcomes.removeFirst()
        }
        switch outcome {
        case .refuse(let why):
            post(.connectionFailed(peer: peer.address, .kernel(why)))
        case .succeed:
            let id = state.withLock { s -> UInt16 in
                let id = s.ids.next()
                s.links[id] = SimGATTBearer()
                return id
            }
            post(.connectionComplete(status: .success, handle: id, peer: peer.address))
        }
    }

    func cancelConnect() async {}

    func disconnect(_ handle: UInt16, reason: HCIStatus) async {
        end(handle, .kernel("ECONNABORTED, Software caused connection abort (errno 103)"))
    }

    /// The link ends (the peer went away, or we closed it): the socket's stream ends, the reason comes after.
    func end(_ handle: UInt16, _ reason: ConnectionManager.Reason) {
        guard let bearer = state.withLock({ $0.links.removeValue(forKey: handle) }) else { return }
        bearer.end()
        post(.linkEnded(handle: handle, reason))
    }

    func bearer(for handle: UInt16) -> (any ATTBearer)? { state.withLock { $0.links[handle] } }
    func rssi(of handle: UInt16) async -> Int8? { nil }
}

@Suite(.timeLimit(.minutes(1))) struct PeripheralKernelLinksTests {
    static let address = BDAddress("00:1B:DC:30:00:01")!

    struct Seen: Sendable {
        var states: [ConnectionManager.Status] = []
        var values: [(BluetoothUUID, [UInt8], String)] = []
        var rssi = 0
        var databases = 0
    }

    /// Waits (a bound for a hang, not a timing claim) until `condition` holds, advertising all the while.
    static func until(_ service: PeripheralService, _ condition: () -> Bool) async -> Bool {
        let ad = Sighting(
            address: address, addressType: .public, rssi: -50, txPower: nil, timestamp: 0,
            isConnectable: true, isScanResponse: false, advertisement: Advertisement(decoding: []))
        for _ in 0..<1000 {
            if condition() { return true }
            service.observe(ad)
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func theServiceRunsGATTOverKernelLinksAndPublishesTheKernelsErrnoReasons() async throws {
        let seen = Locked(Seen())
        var intent = PeripheralIntent(match: .address(Self.address), name: "sensor-k", addressType: .public)
        intent.subscribe = [
            .init(
                characteristic: .init(
                    service: BluetoothUUID(uuid16: 0x181A),
                    characteristic: BluetoothUUID(uuid16: 0x2A6E)))
        ]
        var connections = GatewayConfiguration.Connections()
        connections.rssiIntervalSeconds = 0.05
        let service = PeripheralService(
            intents: [intent], connections: connections, clock: SystemClock(), logger: Logger(label: "test"),
            output: .init(
                state: { _, _, s in seen.withLock { $0.states.append(s) } },
                rssi: { _, _ in seen.withLock { $0.rssi += 1 } },
                value: { _, _, c, v, via in seen.withLock { $0.values.append((c, v, via)) } },
                gatt: { _, _, _ in seen.withLock { $0.databases += 1 } }))
        let links = ScriptedKernelLinks(outcomes: [
            .refuse("ECONNREFUSED, Connection refused (errno 111)"), .succeed,
            .succeed,
        ]) { [service] in service.post($0) }
        service.announce()
        let session = Task { await service.serve(links) }

        // The first attempt is refused by the kernel: published with the errno's name, then tried again.
        #expect(await Self.until(service) { seen.withLock { $0.states.contains { $0.state == .connected } } })
        let refused = seen.withLock { $0.states }.first {
            $0.reason == .kernel("ECONNREFUSED, Connection refused (errno 111)")
        }
        #expect(refused?.state == .disconnected)
        #expect(refused?.reason?.description == "kernel: ECONNREFUSED, Connection refused (errno 111)")
        #expect(links.connects == 2)

        // GATT over the link's bearer: discovery, the CCCD, then notifications of Temperature.
        let first = try #require(links.live.keys.first)
        #expect(await Self.until(service) { seen.withLock { $0.databases } == 1 && service.statuses.count == 1 })
        #expect(
            await Self.until(service) {
                links.live[first]?.notify()
                return seen.withLock { $0.values.count } >= 3
            })
        let values = seen.withLock { $0.values }
        #expect(values.allSatisfy { $0.0 == BluetoothUUID(uuid16: 0x2A6E) && $0.2 == "notification" })

        // The peer goes away: the socket's end reason is published, and the link is made again with a new id.
        links.end(first, .kernel("ECONNRESET, Connection reset by peer (errno 104)"))
        #expect(
            seen.withLock { $0.states }.contains {
                $0.state == .disconnected
                    && $0.reason?.description == "kernel: ECONNRESET, Connection reset by peer (errno 104)"
            })
        #expect(
            await Self.until(service) { links.live.count == 1 && service.statuses[Self.address]?.state == .connected })
        let second = try #require(links.live.keys.first)
        #expect(second != first)
        #expect(await Self.until(service) { seen.withLock { $0.databases } == 2 })

        // A graceful stop closes the link (the gateway's reason stands), and no RSSI was ever asked for.
        await service.stop()
        #expect(service.statuses[Self.address]?.state == .disconnected)
        #expect(service.statuses[Self.address]?.reason == .gatewayStopped)
        #expect(seen.withLock { $0.rssi } == 0)
        session.cancel()
        await session.value
    }

    @Test func errnoReasonsKeepTheSymbolNotTheHint() {
        let refused = TransportError(
            .connectionFailed, errno: 111,
            "connect hci0 → 00:AA:01:01:00:01 (public) on CID 0x0004: ECONNREFUSED, Connection refused (errno 111)"
                + ": the controller would not start the connection; is LE enabled on the adapter?")
        #expect(
            KernelLinkMaker.reason(refused, orderly: "-") == .kernel("ECONNREFUSED, Connection refused (errno 111)"))
        let reset = TransportError(
            .connectionFailed, errno: 104,
            "link hci0 → 00:AA:01:01:00:01 (public) ended: ECONNRESET, Connection reset by peer (errno 104)")
        #expect(
            KernelLinkMaker.reason(reset, orderly: "-") == .kernel("ECONNRESET, Connection reset by peer (errno 104)"))
        // Our own connect deadline names ETIMEDOUT without an errno number: the whole message stands.
        let ours = TransportError(
            .timedOut, errno: 110, "connect hci0 → X: no connection within 15 seconds (ETIMEDOUT)")
        #expect(KernelLinkMaker.reason(ours, orderly: "-") == .kernel(ours.message))
        #expect(KernelLinkMaker.reason(nil, orderly: "the link ended") == .kernel("the link ended"))
    }

    @Test func kernelLinkIDsAreNeverZeroAndStayWithinTwelveBits() {
        var ids = LinkIDs()
        var seen = Set<UInt16>()
        for _ in 0..<0x0EFF { seen.insert(ids.next()) }
        #expect(seen.count == 0x0EFF && !seen.contains(0) && seen.allSatisfy { $0 <= 0x0EFF })
        #expect(ids.next() == 1)
    }
}
