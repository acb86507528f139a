import Testing

@testable import BLEGateway

/// The per-family read-back under MQTT 3.1.1 (PublishEcho): a family is judged by the first message acknowledged
/// after its read-back listens, and only by that message's own topic coming back live.
@Suite struct PublishEchoTests {
    let discovery = "homeassistant/device"
    let doc = "homeassistant/device/blegateway_gw/status/config"

    @Test func aFamilyWhoseAcknowledgedMessageNeverComesBackIsSuspectedOnceAndClearedByItsEcho() {
        var e = PublishEcho(wait: 10)
        e.listening(discovery)
        let r1 = e.acknowledged(doc, family: discovery, now: 100)
        #expect(r1)
        #expect(e.nextDeadline == 110)
        let r2 = e.deadline(now: 109)
        #expect(r2.isEmpty)
        let r3 = e.deadline(now: 110)
        #expect(r3 == [.suspect(family: discovery, topic: doc)])
        #expect(e.suspected == [discovery])
        let r4 = e.deadline(now: 200)
        #expect(r4.isEmpty, "one episode, logged once")
        #expect(e.episodes == 1)
        // A late echo of the awaited topic ends the episode.
        let r5 = e.received(doc, family: discovery)
        #expect(r5 == .clear(family: discovery))
        #expect(e.suspected.isEmpty)
        #expect(e.settled(discovery))
    }

    @Test func anEchoInTimeConfirmsAndNothingIsSuspected() {
        var e = PublishEcho(wait: 10)
        e.listening("p/gw/beacons")
        _ = e.acknowledged("p/gw/beacons/b1", family: "p/gw/beacons", now: 0)
        let r6 = e.received("p/gw/beacons/b1", family: "p/gw/beacons")
        #expect(r6 == nil)
        #expect(e.settled("p/gw/beacons"))
        let r7 = e.deadline(now: 60)
        #expect(r7.isEmpty && e.suspected.isEmpty)
    }

    /// Before the SUBACK the message may have passed the subscription: it is not judged. Nor is another topic of the
    /// family (an operator's write to `peripherals/+/write` is not the gateway's echo).
    @Test func onlyTheAwaitedTopicAfterTheReadBackListensCounts() {
        var e = PublishEcho(wait: 10)
        let r8 = e.acknowledged("p/gw/peripherals/a/state", family: "p/gw/peripherals", now: 0)
        #expect(!r8)
        #expect(e.nextDeadline == nil)
        e.listening("p/gw/peripherals")
        let r9 = e.acknowledged("p/gw/peripherals/a/state", family: "p/gw/peripherals", now: 1)
        #expect(r9)
        let r10 = e.acknowledged("p/gw/peripherals/b/state", family: "p/gw/peripherals", now: 2)
        #expect(!r10, "the first is judged")
        let r11 = e.received("p/gw/peripherals/a/write", family: "p/gw/peripherals")
        #expect(r11 == nil)
        #expect(!e.settled("p/gw/peripherals"))
        let r12 = e.deadline(now: 11)
        #expect(r12 == [.suspect(family: "p/gw/peripherals", topic: "p/gw/peripherals/a/state")])
    }

    /// A suspicion outlives the connection and is judged again by the next connection's first acknowledged message;
    /// what was only being watched starts over.
    @Test func aSuspicionIsKeptAcrossReconnectionsUntilTheNextConnectionsMessageComesBack() {
        var e = PublishEcho(wait: 10)
        e.listening(discovery)
        e.listening("p/gw/health")
        _ = e.acknowledged(doc, family: discovery, now: 0)
        _ = e.deadline(now: 10)
        _ = e.acknowledged("p/gw/health", family: "p/gw/health", now: 11)
        e.disconnected()
        #expect(e.suspected == [discovery])
        #expect(e.nextDeadline == nil, "nothing is awaited while disconnected")
        let r13 = e.received(doc, family: discovery)
        #expect(r13 == nil, "not listening: nothing judged")
        e.listening(discovery)
        let other = "homeassistant/device/blegateway_gw/health/config"
        let r14 = e.acknowledged(other, family: discovery, now: 20)
        #expect(!r14)
        let r15 = e.received(doc, family: discovery)
        #expect(r15 == nil, "the old topic is not this connection's message")
        let r16 = e.received(other, family: discovery)
        #expect(r16 == .clear(family: discovery))
        #expect(e.suspected.isEmpty && e.episodes == 1)
    }

    /// mosquitto sends a message on to its subscribers before the PUBACK goes back: the echo may come first.
    @Test func anEchoThatArrivesBeforeItsAcknowledgementConfirms() {
        var e = PublishEcho(wait: 10)
        e.listening("p/gw/adapter")
        let early = e.received("p/gw/adapter", family: "p/gw/adapter")
        #expect(early == nil)
        let began = e.acknowledged("p/gw/adapter", family: "p/gw/adapter", now: 0)
        #expect(!began && e.settled("p/gw/adapter"))
        let due = e.deadline(now: 60)
        #expect(due.isEmpty && e.suspected.isEmpty)
    }

    /// Every family is read back at the first connection; later only what was published and not yet confirmed, and
    /// what is suspected: a confirmed family costs no SUBSCRIBE at a failover.
    @Test func laterConnectionsReadBackOnlyWhatIsPublishedAndUnconfirmedOrSuspected() {
        var e = PublishEcho(wait: 10)
        let all = ["p/gw/health", "p/gw/beacons", "p/gw/regions", discovery]
        let first = e.connected(all)
        #expect(first == all)
        for f in first { e.listening(f) }
        _ = e.acknowledged("p/gw/health", family: "p/gw/health", now: 0)
        _ = e.received("p/gw/health", family: "p/gw/health")
        _ = e.acknowledged(doc, family: discovery, now: 0)
        _ = e.deadline(now: 10)
        e.disconnected()
        // beacons: published only now, between connections (before its read-back listened again).
        _ = e.acknowledged("p/gw/beacons/b1", family: "p/gw/beacons", now: 11)
        let second = e.connected(all)
        #expect(second == ["p/gw/beacons", discovery], "health confirmed, regions never published")
        #expect(e.settled("p/gw/health"))
    }
}
