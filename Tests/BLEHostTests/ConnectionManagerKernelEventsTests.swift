import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// Shared mode's events: the kernel's sockets report attempts and link ends as errnos, not HCI statuses.
@Suite struct ConnectionManagerKernelEventsTests {
    static let a = ConnectionManager.Peer(address: BDAddress("00:1B:DC:10:00:01")!, addressType: .public)
    static let refused = ConnectionManager.Reason.kernel("ECONNREFUSED, Connection refused (errno 111)")

    var m = ConnectionManager()
    var t: Duration = .zero

    mutating func on(_ e: ConnectionManager.Event, after d: Duration = .zero) -> [ConnectionManager.Action] {
        t += d
        return m.handle(e, now: t)
    }

    static func creates(_ actions: [ConnectionManager.Action]) -> Int {
        actions.filter { if case .createConnection = $0 { true } else { false } }.count
    }

    @Test mutating func aRefusedConnectIsPublishedWithTheErrnoAndBacksOff() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        #expect(Self.creates(on(.advertised(Self.a))) == 1)
        let failed = on(.connectionFailed(peer: Self.a.address, Self.refused), after: .milliseconds(3))
        #expect(m.status(of: Self.a.address)?.state == .disconnected)
        #expect(m.status(of: Self.a.address)?.reason == Self.refused)
        #expect(failed.contains(.publish(Self.a.address, m.status(of: Self.a.address)!)))
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(100))) == 0, "backing off 0.5 s")
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(500))) == 1)
        #expect(m.counters.failedAttempts == 1 && m.counters.attempts == 2)
    }

    @Test mutating func aConnectCancelledAfterTheTimeoutIsAConnectTimeout() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        #expect(on(.tick, after: .seconds(5)).contains(.cancelCreateConnection))
        _ = on(.connectionFailed(peer: Self.a.address, nil), after: .milliseconds(1))
        #expect(m.status(of: Self.a.address)?.reason == .connectTimeout)
        #expect(m.counters.cancelledAttempts == 1)
    }

    @Test mutating func aLinkEndIsPublishedWithTheKernelsReasonUnlessTheGatewayEndedIt() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 7, peer: Self.a.address))
        let reset = ConnectionManager.Reason.kernel("ECONNRESET, Connection reset by peer (errno 104)")
        let down = on(.linkEnded(handle: 7, reset), after: .seconds(60))
        #expect(down.contains(.linkDown(handle: 7, Self.a)))
        #expect(m.status(of: Self.a.address)?.reason == reset)
        #expect(m.status(of: Self.a.address)?.handle == nil)
        // A stale end of the same id changes nothing.
        #expect(on(.linkEnded(handle: 7, reset)).isEmpty)

        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 8, peer: Self.a.address))
        #expect(
            on(.drop(handle: 8, why: "ATT timeout")).contains(
                .disconnect(handle: 8, reason: .remoteUserTerminatedConnection)))
        _ = on(.linkEnded(handle: 8, .kernel("ECONNABORTED, Software caused connection abort (errno 103)")))
        #expect(m.status(of: Self.a.address)?.reason == .dropped("ATT timeout"))
    }
}
