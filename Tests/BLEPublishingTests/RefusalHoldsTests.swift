import Testing

@testable import BLEPublishing

/// The refusal holds in literal values: which family waits, when its probe goes, and where the spool is read again.
struct RefusalHoldsTests {
    let base = "blegateway/gw-1"

    @Test(arguments: [
        ("blegateway/gw-1/beacons/ibeacon-1", "blegateway/gw-1/beacons"),
        ("blegateway/gw-1/health", "blegateway/gw-1/health"),
        ("blegateway/gw-1/peripherals/001bdc100001/state", "blegateway/gw-1/peripherals"),
        ("blegateway/gw-10/health", "blegateway/gw-10"),  // another gateway's base is not this one's
        ("homeassistant/device/gw-1/blegateway_gw-1/config", "homeassistant/device"),
        ("blegateway/fleet/peripherals/001bdc100001/owner", "blegateway/fleet"),
        ("status", "status"),
    ])
    func aTopicsFamilyIsItsLevelUnderTheBaseOrItsFirstTwoLevels(_ topic: String, _ family: String) {
        #expect(RefusalHolds.family(of: topic, base: base) == family)
    }

    @Test func aRefusedFamilyWaitsThenSendsOneProbeWhoseRefusalDoublesTheWait() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(3))
        let r1 = h.admit("a", seq: 1)
        #expect(r1 == .send)
        let r2 = h.refused("a", seq: 1, reason: .notAuthorized, now: .seconds(10), since: 100)
        #expect(r2)
        // Other readings of the family, in flight when the hold began, are refused too: one episode, one wait.
        let r3 = h.refused("a", seq: 2, reason: .notAuthorized, now: .seconds(10.5), since: 100.5)
        #expect(!r3)
        #expect(h.holds["a"]?.phase == .waiting(until: .seconds(11)))
        let r4 = h.admit("a", seq: 3)
        #expect(r4 == .hold)
        let r5 = h.admit("b", seq: 4)
        #expect(r5 == .send, "another family flows")
        #expect(h.nextDeadline == .seconds(11))
        let r6 = h.fallDue(now: .seconds(10.9))
        #expect(r6 == nil)
        let r7 = h.fallDue(now: .seconds(11))
        #expect(r7 == 1, "read again from the oldest refused reading")
        let r8 = h.admit("a", seq: 1)
        #expect(r8 == .send, "the first reading found is the probe")
        let r9 = h.admit("a", seq: 3)
        #expect(r9 == .hold, "one probe at a time")
        #expect(h.nextDeadline == nil)
        let r10 = h.refused("a", seq: 1, reason: .notAuthorized, now: .seconds(12), since: 102)
        #expect(!r10)
        #expect(h.holds["a"]?.phase == .waiting(until: .seconds(14)))
        _ = h.fallDue(now: .seconds(14))
        _ = h.admit("a", seq: 1)
        let r11 = h.refused("a", seq: 1, reason: .notAuthorized, now: .seconds(15), since: 105)
        #expect(!r11)
        #expect(h.holds["a"]?.phase == .waiting(until: .seconds(18)), "the wait stops doubling at its bound")
        #expect(h.holds["a"]?.since == 100, "the episode began at the first refusal")
        #expect(h.families == ["a"])
    }

    @Test func anAcknowledgementEndsTheHoldAndTellsWhereTheBacklogBegins() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 7, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.refused("a", seq: 5, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.refused("b", seq: 6, reason: .quotaExceeded, now: .seconds(1), since: 1)
        #expect(h.oldest?.reason == .notAuthorized)
        _ = h.fallDue(now: .seconds(1))
        let r12 = h.admit("a", seq: 5)
        #expect(r12 == .send)
        let r13 = h.acknowledged("a")
        #expect(r13?.from == 5)
        #expect(h.families == ["b"])
        let r14 = h.acknowledged("a")
        #expect(r14 == nil)
    }

    /// A refused reading that expired in the spool leaves nothing to probe with: its episode closes at the spool's end
    /// instead of staying open for ever.
    @Test func aDueFamilyWithNothingLeftToProbeEndsAtTheSpoolsEnd() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 3, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.refused("b", seq: 4, reason: .notAuthorized, now: .zero, since: 0)
        let r15 = h.fallDue(now: .seconds(1))
        #expect(r15 == 3)
        let r16 = h.admit("b", seq: 4)
        #expect(r16 == .send)
        let r17 = h.endUnprobed()
        #expect(r17 == ["a"])
        #expect(h.families == ["b"])
    }

    /// A probe that ends without a verdict (the connection ends, the window is full, it becomes a dead letter) must not
    /// leave its family probing for ever: the family is due again, and read again from its oldest.
    @Test func aProbeLostWithoutAVerdictMakesItsFamilyDueAgain() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 3, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.fallDue(now: .seconds(1))
        let probe = h.admit("a", seq: 3)
        #expect(probe == .send)
        let unrelated = h.probeLost(9)
        #expect(unrelated == nil)
        let from = h.probeLost(3)
        #expect(from == 3)
        #expect(h.holds["a"]?.phase == .due)
        let next = h.admit("a", seq: 4)
        #expect(next == .send, "the next reading of the family found is the probe")
    }

    @Test func aNewConnectionLeavesNoProbeWithTheBroker() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 3, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.refused("b", seq: 4, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.fallDue(now: .seconds(1))
        _ = h.admit("a", seq: 3)
        _ = h.refused("b", seq: 4, reason: .notAuthorized, now: .seconds(1), since: 1)
        h.connectionChanged()
        #expect(h.holds["a"]?.phase == .due)
        #expect(h.holds["b"]?.phase == .waiting(until: .seconds(3)), "a wait stands across connections")
    }

    /// The publisher's cursor may be past readings of a family when its probe is acknowledged (they were held), and a
    /// reading sent after the acknowledgement may be refused before the backlog is read again: the new hold begins at
    /// the old backlog, so nothing between the two is stranded behind the cursor.
    @Test func aHoldBeginningBeforeTheLastOnesBacklogWasSentBeginsAtThatBacklog() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 10, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.fallDue(now: .seconds(1))
        _ = h.admit("a", seq: 10)
        let ended = h.acknowledged("a")
        #expect(ended?.from == 10)
        _ = h.refused("a", seq: 101, reason: .notAuthorized, now: .seconds(2), since: 2)
        #expect(h.holds["a"]?.from == 10)
        let from = h.fallDue(now: .seconds(3))
        #expect(from == 10)
    }

    /// A due family whose oldest reading is still with the broker (sent before the hold began) has that reading for its
    /// probe: its hold does not end at the spool's end as though its readings had expired.
    @Test func aReadingOfADueFamilyAlreadyWithTheBrokerIsItsProbe() {
        var h = RefusalHolds(initialBackoff: .seconds(1), maxBackoff: .seconds(60))
        _ = h.refused("a", seq: 5, reason: .notAuthorized, now: .zero, since: 0)
        _ = h.fallDue(now: .seconds(1))
        h.inFlight("a", seq: 6)
        #expect(h.holds["a"]?.phase == .probing(seq: 6))
        let ended = h.endUnprobed()
        #expect(ended == [])
        let refusedAgain = h.refused("a", seq: 6, reason: .notAuthorized, now: .seconds(1), since: 1)
        #expect(!refusedAgain)
        #expect(h.holds["a"]?.phase == .waiting(until: .seconds(3)), "its refusal is the probe's: the wait doubles")
    }
}
