import BLEHCI
import BLETransport
import Testing

@testable import BLEHost

/// The waiting-connection policy, in virtual time: events in, actions out.
@Suite struct ConnectionManagerTests {
    static let a = ConnectionManager.Peer(address: BDAddress("00:1B:DC:10:00:01")!, addressType: .public)
    static let b = ConnectionManager.Peer(address: BDAddress("00:1B:DC:10:00:02")!, addressType: .public)
    static let c = ConnectionManager.Peer(address: BDAddress("00:1B:DC:10:00:03")!, addressType: .public)

    var m: ConnectionManager
    var t: Duration = .zero

    init() {
        var config = ConnectionManager.Configuration()
        config.maxConnections = 2
        config.connectTimeout = .seconds(5)
        m = ConnectionManager(configuration: config)
    }

    mutating func on(_ e: ConnectionManager.Event, after d: Duration = .zero) -> [ConnectionManager.Action] {
        t += d
        return m.handle(e, now: t)
    }

    static func creates(_ actions: [ConnectionManager.Action]) -> [BDAddress] {
        actions.compactMap { if case .createConnection(let p, _) = $0 { return p.address } else { return nil } }
    }

    @Test mutating func connectsOnlyOnceTheDeviceIsHeardAdvertising() {
        #expect(Self.creates(on(.adapterUp)).isEmpty)
        let wanted = on(.want(Self.a))
        #expect(wanted == [.publish(Self.a.address, m.status(of: Self.a.address)!)])
        #expect(m.status(of: Self.a.address)?.state == .disconnected)
        #expect(Self.creates(on(.tick, after: .seconds(30))).isEmpty, "not heard: no attempt holds the initiator")
        let actions = on(.advertised(Self.a))
        #expect(Self.creates(actions) == [Self.a.address])
        #expect(m.status(of: Self.a.address)?.state == .connecting)
        #expect(m.status(of: Self.a.address)?.attempts == 1)
        let up = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address), after: .milliseconds(80))
        #expect(up.contains(.linkUp(handle: 0x40, Self.a)))
        #expect(m.status(of: Self.a.address)?.state == .connected)
        #expect(m.status(of: Self.a.address)?.handle == 0x40)
    }

    @Test mutating func aSupervisionTimeoutIsPublishedByNameAndTheDeviceIsReconnectedWhenHeardAgain() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address))
        let down = on(.disconnectionComplete(handle: 0x40, reason: .connectionTimeout), after: .seconds(600))
        #expect(down.contains(.linkDown(handle: 0x40, Self.a)))
        let s = m.status(of: Self.a.address)!
        #expect(s.state == .disconnected && s.reason == .hci(.connectionTimeout) && s.since == t)
        #expect(s.reason?.description == "HCI 0x08 Connection Timeout")
        // The link had been stable: no backoff, and the next advertisement connects at once.
        #expect(Self.creates(on(.tick, after: .seconds(1))).isEmpty, "gone until heard")
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(100))) == [Self.a.address])
    }

    @Test mutating func failedEstablishmentBacksOffAndDoubles() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .connectionFailedToBeEstablished, handle: 0, peer: Self.a.address))
        #expect(m.status(of: Self.a.address)?.reason == .hci(.connectionFailedToBeEstablished))
        #expect(m.status(of: Self.a.address)?.reason?.code == 0x3E)
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(100))).isEmpty, "backing off 500 ms")
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(450))) == [Self.a.address])
        _ = on(.connectionComplete(status: .connectionFailedToBeEstablished, handle: 0, peer: Self.a.address))
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(900))).isEmpty, "now 1 s")
        #expect(Self.creates(on(.advertised(Self.a), after: .milliseconds(150))) == [Self.a.address])
        #expect(m.status(of: Self.a.address)?.attempts == 3)
        #expect(m.counters.failedAttempts == 2)
    }

    @Test mutating func aDeviceThatNeverAnswersIsCancelledAndTheNextOneGetsItsTurn() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.want(Self.b))
        _ = on(.advertised(Self.a))
        let first = Self.creates(on(.advertised(Self.b)))
        #expect(first.isEmpty, "one LE Create Connection at a time")
        // a's attempt hangs: after the timeout the manager cancels it (§7.8.13) ...
        #expect(on(.tick, after: .seconds(5)).contains(.cancelCreateConnection))
        #expect(!on(.tick, after: .seconds(1)).contains(.cancelCreateConnection), "cancelled once")
        // ... the controller ends it with 0x02, and b is tried next, while a backs off.
        _ = on(.advertised(Self.b))
        let next = on(
            .connectionComplete(status: .unknownConnectionIdentifier, handle: 0, peer: BDAddress("00:00:00:00:00:00")!))
        #expect(m.status(of: Self.a.address)?.reason == .connectTimeout)
        #expect(Self.creates(next) == [Self.b.address])
        #expect(m.counters.cancelledAttempts == 1)
    }

    /// The service sleeps until `nextDeadline` and ticks: a deadline already passed would wake it at once, for
    /// ever, while an absent device waits or a Cancel awaits its Connection Complete.
    @Test mutating func theTimerNeverNamesAMomentAlreadyPassed() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .connectionFailedToBeEstablished, handle: 0, peer: Self.a.address))
        #expect(m.nextDeadline == t + .milliseconds(500), "a's backoff ends then")
        // The device is not heard again: its backoff passes and nothing is left to wake for.
        #expect(Self.creates(on(.tick, after: .seconds(20))).isEmpty, "last heard 20 s ago")
        #expect(m.nextDeadline == nil)
        // An attempt that hangs wakes the timer at its connect timeout, and no more once the Cancel is sent.
        #expect(Self.creates(on(.advertised(Self.a))) == [Self.a.address])
        #expect(m.nextDeadline == t + .seconds(5))
        #expect(on(.tick, after: .seconds(5)).contains(.cancelCreateConnection))
        #expect(m.nextDeadline == nil, "the Cancel's Connection Complete is awaited, not a time")
    }

    @Test mutating func neverMoreLinksThanAllowedAndFewerOnceTheControllerSaysSo() {
        _ = on(.adapterUp)
        for (i, p) in [Self.a, Self.b].enumerated() {
            _ = on(.want(p))
            #expect(Self.creates(on(.advertised(p))) == [p.address])
            _ = on(.connectionComplete(status: .success, handle: UInt16(0x40 + i), peer: p.address))
        }
        _ = on(.want(Self.c))
        #expect(Self.creates(on(.advertised(Self.c), after: .seconds(1))).isEmpty, "two links is the maximum")
        // One link goes: c gets the free place.
        _ = on(.disconnectionComplete(handle: 0x40, reason: .remoteUserTerminatedConnection), after: .seconds(20))
        #expect(Self.creates(on(.advertised(Self.c))) == [Self.c.address])
        // The controller has room for fewer links than configured.
        _ = on(.createStatus(.connectionLimitExceeded))
        #expect(m.status(of: Self.c.address)?.reason == .hci(.connectionLimitExceeded))
        _ = on(.disconnectionComplete(handle: 0x41, reason: .connectionTimeout), after: .seconds(20))
        #expect(
            Self.creates(on(.advertised(Self.c), after: .seconds(5))) == [Self.c.address], "below the learned limit")
    }

    @Test mutating func anAdapterLossDisconnectsEveryPeerAndTheyComeBackAfterIt() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.want(Self.b))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address), after: .seconds(1))
        _ = on(.advertised(Self.b))
        let lost = on(.adapterDown, after: .seconds(30))
        #expect(lost.contains(.linkDown(handle: 0x40, Self.a)))
        #expect(m.status(of: Self.a.address)?.state == .disconnected)
        #expect(m.status(of: Self.a.address)?.reason == .adapterLost)
        #expect(m.status(of: Self.b.address)?.state == .disconnected, "no stale connecting")
        #expect(Self.creates(on(.advertised(Self.a))).isEmpty, "no controller, no attempt")
        // Heard while the adapter was away (a second adapter's scan, a report in flight): tried once it is back.
        #expect(Self.creates(on(.adapterUp, after: .seconds(2))) == [Self.a.address])
    }

    @Test mutating func aDroppedLinkIsDisconnectedWithTheGatewaysReason() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address))
        let drop = on(.drop(handle: 0x40, why: "ATT request timed out after 30 s"), after: .seconds(31))
        #expect(drop.contains(.disconnect(handle: 0x40, reason: .remoteUserTerminatedConnection)))
        #expect(m.status(of: Self.a.address)?.state == .disconnecting)
        _ = on(.disconnectionComplete(handle: 0x40, reason: .connectionTerminatedByLocalHost))
        #expect(m.status(of: Self.a.address)?.state == .disconnected)
        #expect(m.status(of: Self.a.address)?.reason == .dropped("ATT request timed out after 30 s"))
    }

    @Test mutating func anIntentRemovedWhileConnectedDisconnectsAndForgets() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address))
        #expect(
            on(.unwant(Self.a.address)).contains(.disconnect(handle: 0x40, reason: .remoteUserTerminatedConnection)))
        let gone = on(.disconnectionComplete(handle: 0x40, reason: .connectionTerminatedByLocalHost))
        #expect(gone.contains { if case .publish(_, let s) = $0 { s.state == .disconnected } else { false } })
        #expect(m.status(of: Self.a.address) == nil)
        #expect(Self.creates(on(.advertised(Self.a))).isEmpty)
    }

    @Test mutating func aGracefulStopEndsEveryLinkItselfAndTriesNoMore() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.want(Self.b))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address))
        _ = on(.advertised(Self.b))
        let stop = on(.shutdown)
        #expect(stop.contains(.disconnect(handle: 0x40, reason: .remoteTerminatedPowerOff)))
        #expect(stop.contains(.cancelCreateConnection), "b's attempt in flight")
        #expect(m.status(of: Self.a.address)?.state == .disconnecting)
        _ = on(.disconnectionComplete(handle: 0x40, reason: .connectionTerminatedByLocalHost))
        #expect(m.status(of: Self.a.address)?.reason == .gatewayStopped)
        // The Cancel crossed b's link: it is ended at once, never reported connected.
        let late = on(.connectionComplete(status: .success, handle: 0x41, peer: Self.b.address))
        #expect(late.contains(.disconnect(handle: 0x41, reason: .remoteTerminatedPowerOff)))
        #expect(!late.contains(.linkUp(handle: 0x41, Self.b)))
        #expect(Self.creates(on(.advertised(Self.a), after: .seconds(5))).isEmpty)
        _ = on(.adapterDown)
        #expect(m.status(of: Self.b.address)?.reason == .gatewayStopped)
    }

    @Test mutating func aHandOverEndsEveryLinkHereWithoutPenaltyAndTheOtherAdapterConnectsAtOnce() {
        _ = on(.adapterUp)
        _ = on(.want(Self.a))
        _ = on(.want(Self.b))
        _ = on(.advertised(Self.a))
        _ = on(.connectionComplete(status: .success, handle: 0x40, peer: Self.a.address), after: .seconds(1))
        _ = on(.advertised(Self.b))
        let release = on(.handOver, after: .seconds(2))
        #expect(release.contains(.disconnect(handle: 0x40, reason: .remoteUserTerminatedConnection)))
        #expect(release.contains(.cancelCreateConnection), "b's attempt in flight")
        #expect(Self.creates(on(.advertised(Self.a), after: .seconds(1))).isEmpty, "no new attempt on this controller")
        // The Cancel crossed b's link: ended at once for the other adapter, never reported connected here.
        let late = on(.connectionComplete(status: .success, handle: 0x41, peer: Self.b.address))
        #expect(late.contains(.disconnect(handle: 0x41, reason: .remoteUserTerminatedConnection)))
        #expect(!late.contains(.linkUp(handle: 0x41, Self.b)))
        _ = on(.disconnectionComplete(handle: 0x40, reason: .connectionTerminatedByLocalHost))
        #expect(m.status(of: Self.a.address)?.reason == .handedOver)
        _ = on(.adapterDown)
        #expect(m.status(of: Self.b.address)?.reason == .handedOver)
        // The other adapter: a was up for 3 s only, yet the gateway ended it: no backoff, it goes first at once.
        _ = on(.advertised(Self.a))
        #expect(Self.creates(on(.adapterUp)) == [Self.a.address])
    }

    @Test mutating func aHandOverAskedOfASessionThatNeverCameUpDoesNotHoldBackTheNextOne() {
        _ = on(.want(Self.a))
        _ = on(.advertised(Self.a))
        // The role was moved away before its first session came up: no adapterDown follows.
        _ = on(.handOver)
        #expect(Self.creates(on(.adapterUp, after: .milliseconds(10))) == [Self.a.address])
    }
}
