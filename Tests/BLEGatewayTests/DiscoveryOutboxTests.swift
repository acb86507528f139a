import Testing

@testable import BLEGateway

/// The discovery outbox in literal values: what goes when, what is kept until acknowledged, what a refusal holds.
struct DiscoveryOutboxTests {
    typealias M = DiscoveryOutbox.Message
    let doc = M(topic: "homeassistant/device/gw-1/blegateway_gw-1/config", payload: Array("{}".utf8))
    let removal = M(topic: "homeassistant/device/gw-1/blegateway_gw-1_c0ffee000002/config", payload: [])

    @Test func documentsWaitOfflineAndGoInOrderOnceConnected() {
        var o = DiscoveryOutbox()
        let offline = o.enqueue([doc, removal])
        #expect(offline == [])
        #expect(o.pending == 2)
        let onConnect = o.connected()
        #expect(onConnect.map(\.message) == [doc, removal])
        let newer = M(topic: doc.topic, payload: Array(#"{"v":2}"#.utf8))
        let whileOlderOut = o.enqueue([newer])
        #expect(whileOlderOut == [], "one payload per topic with the broker: the newer waits for the older's answer")
        let next = o.acknowledged(onConnect[0])
        #expect(next.map(\.message) == [newer], "the older payload's answer lets the newer go")
        #expect(o.pending == 2, "the older payload's acknowledgement does not settle the newer one")
        _ = o.acknowledged(next[0])
        _ = o.acknowledged(onConnect[1])
        #expect(o.pending == 0)
    }

    @Test func whatTheConnectionLostIsSentAgainAtTheNextOne() {
        var o = DiscoveryOutbox()
        _ = o.connected()
        let first = o.enqueue([doc])
        #expect(first.map(\.message) == [doc])
        o.disconnected()
        let offline = o.enqueue([removal])
        #expect(offline == [], "offline: waits")
        let again = o.connected()
        #expect(again.map(\.message) == [doc, removal])
        // The first connection's send fails late: it is not this connection's, and changes nothing.
        o.failed(first[0])
        #expect(o.inFlight == 2)
    }

    /// A refused document (the broker's ACL) is counted, said once per episode, and sent again only at the next
    /// connection, where an operator's fixed ACL takes it.
    @Test func aRefusedDocumentWaitsForTheNextConnection() {
        var o = DiscoveryOutbox()
        _ = o.connected()
        let sent = o.enqueue([doc, removal])
        let began = o.refused(sent[0]).began
        #expect(began, "the first refusal begins the episode")
        let again = o.refused(sent[1]).began
        #expect(!again, "the episode is under way")
        #expect(o.refused == 2 && o.refusals == 2)
        o.disconnected()
        let resent = o.connected()
        #expect(resent.map(\.message) == [doc, removal])
        #expect(o.refused == 0 && o.pending == 2)
        let stillRefused = o.refused(resent[0]).began
        #expect(!stillRefused, "a reconnection fixes nothing: the same episode, not logged again")
        _ = o.acknowledged(resent[1])
        #expect(o.pending == 1 && o.refused == 1, "the refused document waits for the next connection")
    }

    /// Discovery has its own room in the client's window: a burst of documents goes `quota` at a time, the next as each
    /// answer comes, so the readings' window is never filled by it.
    @Test func aBurstGoesAQuotaAtATime() {
        var o = DiscoveryOutbox(quota: 2)
        _ = o.connected()
        let docs = (1...5).map { M(topic: "homeassistant/device/gw-1/d\($0)/config", payload: [UInt8($0)]) }
        let first = o.enqueue(docs)
        #expect(first.map(\.message) == Array(docs[0..<2]))
        let afterOne = o.acknowledged(first[0])
        #expect(afterOne.map(\.message) == [docs[2]])
        // A send that failed for a full window waits for the next answer instead of spinning.
        o.failed(first[1])
        #expect(o.inFlight == 1)
        let afterTwo = o.acknowledged(afterOne[0])
        #expect(afterTwo.map(\.message) == [docs[1], docs[3]])
    }

    /// After a reconnection the announcer republishes every document; a removal queued before it (a device taken out
    /// of the configuration while the broker was away) must go too, and a topic in both goes once, newest payload.
    @Test func aReconnectionSendsWhatWaitedAndTheRepublishedDocumentsOnce() {
        var o = DiscoveryOutbox()
        _ = o.connected()
        let sent = o.enqueue([doc])
        o.disconnected()
        _ = o.enqueue([removal])
        let resent = o.connected() + o.enqueue([doc])
        #expect(resent.map(\.message) == [doc, removal])
        _ = o.acknowledged(sent[0])
        #expect(o.pending == 2, "the earlier connection's answer settles nothing")
    }
}
