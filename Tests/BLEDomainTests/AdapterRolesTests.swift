import BLEDomain
import Testing

/// Two adapters: who scans and who connects, as each one's usability changes (virtual time).
@Suite struct AdapterRolesTests {
    typealias R = AdapterRoles

    @Test func theFirstUsableAdapterTakesBothDutiesAndTheSecondTakesItsOwnAtOnce() {
        var roles = R(handback: .seconds(10))
        #expect(roles.handle(.usable(.primary), now: .zero) == [.assign(.primary, .both)])
        // The secondary was never lost: no handback wait, it takes the connections now (taken from the primary
        // first, so no link layer is served by both).
        #expect(
            roles.handle(.usable(.secondary), now: .milliseconds(200))
                == [.assign(.primary, .scan), .assign(.secondary, .connect)])
        #expect(roles.duties == [.primary: .scan, .secondary: .connect])
    }

    @Test func whenOneAdapterIsLostTheOtherTakesBothDutiesAndTheLostOneCarriesNone() {
        var roles = R(handback: .seconds(10))
        _ = roles.handle(.usable(.primary), now: .zero)
        _ = roles.handle(.usable(.secondary), now: .zero)
        let handed = roles.statistics.handovers
        #expect(
            roles.handle(.unusable(.secondary), now: .seconds(5))
                == [.assign(.secondary, []), .assign(.primary, .both)])
        #expect(roles.statistics.handovers == handed + 1)
        _ = roles.handle(.unusable(.primary), now: .seconds(6))
        #expect(roles.duties == [.primary: [], .secondary: []])
    }

    @Test func aReturningAdapterGetsItsDutyBackOnlyAfterTheHandbackTime() {
        var roles = R(handback: .seconds(10))
        _ = roles.handle(.usable(.primary), now: .zero)
        _ = roles.handle(.usable(.secondary), now: .zero)
        _ = roles.handle(.unusable(.primary), now: .seconds(20))
        #expect(roles.duties == [.primary: [], .secondary: .both])
        // Back at 30 s: nothing moves yet; the machine asks to be called at 40 s.
        #expect(roles.handle(.usable(.primary), now: .seconds(30)) == [.wait(until: .seconds(40))])
        #expect(roles.handle(.timePassed, now: .seconds(39)) == [.wait(until: .seconds(40))])
        let handed = roles.statistics.handovers
        #expect(
            roles.handle(.timePassed, now: .seconds(40))
                == [.assign(.secondary, .connect), .assign(.primary, .scan)])
        #expect(roles.statistics.handovers == handed + 1)
    }

    @Test func anAdapterThatFlapsBeforeTheHandbackTakesNothingBack() {
        var roles = R(handback: .seconds(10))
        _ = roles.handle(.usable(.primary), now: .zero)
        _ = roles.handle(.usable(.secondary), now: .zero)
        _ = roles.handle(.unusable(.secondary), now: .seconds(1))
        let handed = roles.statistics.handovers
        for t in stride(from: 2, to: 60, by: 4) {
            #expect(roles.handle(.usable(.secondary), now: .seconds(t)) == [.wait(until: .seconds(t + 10))])
            #expect(roles.handle(.unusable(.secondary), now: .seconds(t + 2)) == [])
        }
        #expect(roles.duties == [.primary: .both, .secondary: []])
        #expect(roles.statistics.handovers == handed)
    }

    @Test func afterBothWereLostTheFirstBackTakesBothWithoutWaiting() {
        var roles = R(handback: .seconds(10))
        _ = roles.handle(.usable(.primary), now: .zero)
        _ = roles.handle(.usable(.secondary), now: .zero)
        _ = roles.handle(.unusable(.primary), now: .seconds(1))
        _ = roles.handle(.unusable(.secondary), now: .seconds(2))
        // Nobody else can scan or connect: waiting for the handback would only leave the gateway deaf.
        #expect(roles.handle(.usable(.secondary), now: .seconds(3)).first == .assign(.secondary, .both))
        // The primary comes back next: the secondary keeps the scan until the primary has been back 10 s.
        #expect(roles.handle(.usable(.primary), now: .seconds(4)) == [.wait(until: .seconds(13))])
        #expect(roles.handle(.timePassed, now: .seconds(13)) == [.wait(until: .seconds(14))])
        #expect(
            roles.handle(.timePassed, now: .seconds(14)) == [.assign(.secondary, .connect), .assign(.primary, .scan)])
    }

    @Test func repeatedReportsOfTheSameStateChangeNothing() {
        var roles = R(handback: .seconds(10))
        _ = roles.handle(.usable(.primary), now: .zero)
        #expect(roles.handle(.usable(.primary), now: .seconds(1)) == [])
        #expect(roles.handle(.unusable(.secondary), now: .seconds(2)) == [])
        #expect(roles.duties == [.primary: .both, .secondary: []])
    }
}
