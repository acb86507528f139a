import Testing

@testable import BLEFleet

/// The lease that lets one of two fleet services act (FleetLease), driven with literal claims and times: what the
/// broker echoes, what another instance writes, and the deadlines the machine asks for.
struct FleetLeaseTests {
    typealias Claim = FleetLease.Claim

    static func claim(_ instance: String, serial: UInt64, epoch: UInt64, leaseS: Double = 15) -> [UInt8] {
        Claim(instance: instance, serial: serial, epoch: epoch, leaseS: leaseS).payload
    }

    /// Connected at 0, nothing retained: it claims at the end of the startup wait and acts after its echo and settle.
    static func activeAlone() -> FleetLease {
        var a = FleetLease(instance: "a", firstSerial: 10)
        _ = a.connected(now: 0)
        _ = a.deadline(now: 2)
        _ = a.received(claim("a", serial: 10, epoch: 1), now: 2.01)
        _ = a.deadline(now: 3.01)
        return a
    }

    @Test func anInstanceAloneClaimsAfterTheStartupWaitAndActsOnlyAfterItsEchoAndTheSettle() {
        var a = FleetLease(instance: "a", firstSerial: 10)
        #expect(a.connected(now: 0) == [])
        #expect(a.nextDeadline == 2)
        #expect(a.deadline(now: 1.5) == [])
        #expect(a.deadline(now: 2) == [.claim(Claim(instance: "a", serial: 10, epoch: 1, leaseS: 15))])
        // Without its echo it does not act, however long it waits short of the fence.
        #expect(a.deadline(now: 5) == [])
        #expect(a.received(Self.claim("a", serial: 10, epoch: 1), now: 5.1) == [])
        #expect(a.nextDeadline == 6.1)
        #expect(a.deadline(now: 6.1) == [.activate(epoch: 1)])
        #expect(a.isActive)
    }

    @Test func theFormatIsTheOneOnTheTopic() {
        let c = Claim(instance: "fleet-a", serial: 7, epoch: 3, leaseS: 15)
        #expect(
            String(decoding: c.payload, as: UTF8.self) == #"{"epoch":3,"instance":"fleet-a","lease_s":15,"serial":7}"#)
        #expect(Claim.parse(c.payload) == c)
        #expect(Claim.parse(Array("{}".utf8)) == nil)
        #expect(Claim.parse(Array(#"{"epoch":3,"instance":"","lease_s":15,"serial":7}"#.utf8)) == nil)
        #expect(Claim.parse(Array(#"{"epoch":3,"instance":"a","lease_s":-1,"serial":7}"#.utf8)) == nil)
    }

    @Test func aRetainedClaimOfAnotherInstanceMakesAStandbyThatTakesOverOnlyWhenItsLeaseRunsOut() {
        var b = FleetLease(instance: "b", firstSerial: 100)
        _ = b.connected(now: 0)
        #expect(b.received(Self.claim("a", serial: 4, epoch: 2), now: 0.2) == [])
        #expect(b.deadline(now: 2) == [])
        #expect(b.state == .standby(holder: "a", until: 15.2))
        // Renewed: the lease runs from the renewal.
        #expect(b.received(Self.claim("a", serial: 5, epoch: 2), now: 5) == [])
        #expect(b.nextDeadline == 20)
        #expect(b.deadline(now: 15.2) == [])
        // The holder stops renewing (killed): at the lease's end the standby claims, one epoch on.
        #expect(b.deadline(now: 20) == [.claim(Claim(instance: "b", serial: 100, epoch: 3, leaseS: 15))])
        _ = b.received(Self.claim("b", serial: 100, epoch: 3), now: 20.05)
        #expect(b.deadline(now: 21.05) == [.activate(epoch: 3)])
    }

    @Test func aReleaseLetsTheStandbyClaimAtOnce() {
        var b = FleetLease(instance: "b", firstSerial: 1)
        _ = b.connected(now: 0)
        _ = b.received(Self.claim("a", serial: 4, epoch: 2), now: 0.1)
        _ = b.deadline(now: 2)
        #expect(b.received([], now: 3) == [.claim(Claim(instance: "b", serial: 1, epoch: 3, leaseS: 15))])
    }

    @Test func aRestartedInstanceTakesItsPreviousRunsClaimForAFreeLease() {
        var a = FleetLease(instance: "a", firstSerial: 500)
        _ = a.connected(now: 0)
        _ = a.received(Self.claim("a", serial: 12, epoch: 4), now: 0.1)
        #expect(a.deadline(now: 2) == [.claim(Claim(instance: "a", serial: 500, epoch: 5, leaseS: 15))])
    }

    @Test func twoClaimsAtOnceTheLaterInTheBrokersOrderWinsAndOnlyItActs() {
        // The broker orders a's claim before b's; both instances receive both in that order.
        var a = FleetLease(instance: "a", firstSerial: 1)
        var b = FleetLease(instance: "b", firstSerial: 1)
        _ = a.connected(now: 0)
        _ = b.connected(now: 0)
        let ca = a.deadline(now: 2)
        let cb = b.deadline(now: 2)
        #expect(ca == [.claim(Claim(instance: "a", serial: 1, epoch: 1, leaseS: 15))])
        #expect(cb == [.claim(Claim(instance: "b", serial: 1, epoch: 1, leaseS: 15))])
        _ = a.received(Self.claim("a", serial: 1, epoch: 1), now: 2.01)
        _ = a.received(Self.claim("b", serial: 1, epoch: 1), now: 2.02)
        _ = b.received(Self.claim("a", serial: 1, epoch: 1), now: 2.01)
        _ = b.received(Self.claim("b", serial: 1, epoch: 1), now: 2.02)
        #expect(a.state == .standby(holder: "b", until: 17.02))
        #expect(a.deadline(now: 3.02) == [])
        #expect(b.deadline(now: 3.02) == [.activate(epoch: 1)])
    }

    @Test func theActiveInstanceRenewsAndYieldsToALaterClaim() {
        var a = Self.activeAlone()
        #expect(a.nextDeadline == 7)  // renewed 5 s after the claim was written
        #expect(a.deadline(now: 7) == [.claim(Claim(instance: "a", serial: 11, epoch: 1, leaseS: 15))])
        _ = a.received(Self.claim("a", serial: 11, epoch: 1), now: 7.01)
        #expect(a.received(Self.claim("b", serial: 3, epoch: 2), now: 8) == [.deactivate(.yielded(to: "b"))])
        #expect(a.state == .standby(holder: "b", until: 23))
    }

    @Test func theActiveInstanceFencesItselfBeforeAnotherInstancesLeaseOnItsLastEchoRunsOut() {
        var a = Self.activeAlone()
        var b = FleetLease(instance: "b", firstSerial: 1)
        _ = b.connected(now: 0)
        _ = b.received(Self.claim("a", serial: 10, epoch: 1), now: 2.01)
        _ = b.deadline(now: 2)
        // Cut off after its first claim's echo (2.01): its renewals go nowhere.
        #expect(a.deadline(now: 7) == [.claim(Claim(instance: "a", serial: 11, epoch: 1, leaseS: 15))])
        #expect(a.deadline(now: 12) == [.claim(Claim(instance: "a", serial: 12, epoch: 1, leaseS: 15))])
        #expect(a.nextDeadline == 2.01 + 11.25)
        #expect(a.deadline(now: 13.26) == [.deactivate(.fenced)])
        #expect(a.state == .fenced && a.nextDeadline == nil)
        // b takes over only after a stopped.
        #expect(b.deadline(now: 17.01) == [.claim(Claim(instance: "b", serial: 1, epoch: 2, leaseS: 15))])
        _ = b.received(Self.claim("b", serial: 1, epoch: 2), now: 17.02)
        #expect(b.deadline(now: 18.02) == [.activate(epoch: 2)])
        // The cut heals: a's renewals written into the partition arrive late, after b's claim, and change nothing.
        _ = b.received(Self.claim("a", serial: 12, epoch: 1), now: 19)
        #expect(b.isActive && b.counters.staleClaims == 1)
        // a hears the broker again, sees b hold the lease, and stays a standby.
        _ = a.received(Self.claim("a", serial: 12, epoch: 1), now: 19)
        _ = a.received(Self.claim("b", serial: 2, epoch: 2), now: 20.5)
        #expect(a.deadline(now: 21) == [])
        #expect(a.state == .standby(holder: "b", until: 35.5))
    }

    @Test func aClaimTheBrokerNeverEchoesIsGivenUpAtTheFence() {
        var a = FleetLease(instance: "a", firstSerial: 1)
        _ = a.connected(now: 0)
        _ = a.deadline(now: 2)
        #expect(a.deadline(now: 13.25) == [])
        #expect(a.state == .fenced && !a.isActive && a.counters.fences == 1)
    }

    @Test func stoppingReleasesTheLeaseAndADisconnectionStopsActingAtOnce() {
        var a = Self.activeAlone()
        #expect(a.stop() == [.deactivate(.stopping), .release])
        var b = Self.activeAlone()
        #expect(b.disconnected(now: 4) == [.deactivate(.disconnected)])
        #expect(b.state == .away && b.nextDeadline == nil)
        // Connected again: its own retained claim is its own, so it claims again after the startup wait.
        _ = b.connected(now: 5)
        _ = b.received(Self.claim("a", serial: 10, epoch: 1), now: 5.1)
        #expect(b.deadline(now: 7) == [.claim(Claim(instance: "a", serial: 11, epoch: 2, leaseS: 15))])
    }

    /// What the pages and /metrics show is read from the lease's state: a standby that never acted (no action took it
    /// there) says standby and names the holder, the active one names itself.
    @Test func thePagesStandingIsTheLeasesState() {
        var b = FleetLease(instance: "b", firstSerial: 1)
        #expect(FleetViews.LeaseStanding(b).role == "disconnected")
        _ = b.connected(now: 0)
        #expect(FleetViews.LeaseStanding(b).role == "starting")
        _ = b.received(Self.claim("a", serial: 4, epoch: 2), now: 0.2)
        _ = b.deadline(now: 2)
        let standby = FleetViews.LeaseStanding(b)
        #expect(standby.role == "standby" && standby.activeInstance == "a")
        let active = FleetViews.LeaseStanding(Self.activeAlone())
        #expect(active.role == "active" && active.activeInstance == "a")
    }

    @Test func aPayloadThatIsNotAClaimIsCountedAndChangesNothing() {
        var a = Self.activeAlone()
        #expect(a.received(Array("hello".utf8), now: 4) == [])
        #expect(a.isActive && a.counters.unreadable == 1)
    }
}
