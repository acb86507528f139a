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
        #expect(onConnect == [doc, removal])
        let newer = M(topic: doc.topic, payload: Array(#"{"v":2}"#.utf8))
        let online = o.enqueue([newer])
        #expect(online == [newer], "connected: at once")
        o.acknowledged(doc)
        #expect(o.pending == 2, "the older payload's acknowledgement does not settle the newer one")
        o.acknowledged(newer)
        o.acknowledged(removal)
        #expect(o.pending == 0)
    }

    @Test func whatTheConnectionLostIsSentAgainAtTheNextOne() {
        var o = DiscoveryOutbox()
        _ = o.connected()
        let first = o.enqueue([doc])
        #expect(first == [doc])
        o.disconnected()
        let offline = o.enqueue([removal])
        #expect(offline == [], "offline: waits")
        let again = o.connected()
        #expect(again == [doc, removal])
    }

    /// A refused document (the broker's ACL) is counted, said once per episode, and sent again only at the next
    /// connection, where an operator's fixed ACL takes it.
    @Test func aRefusedDocumentWaitsForTheNextConnection() {
        var o = DiscoveryOutbox()
        _ = o.connected()
        _ = o.enqueue([doc, removal])
        let began = o.refused(doc)
        #expect(began, "the first refusal begins the episode")
        let again = o.refused(removal)
        #expect(!again, "the episode is under way")
        #expect(o.refused == 2 && o.refusals == 2)
        o.disconnected()
        let resent = o.connected()
        #expect(resent == [doc, removal])
        #expect(o.refused == 0 && o.pending == 2)
        let stillRefused = o.refused(doc)
        #expect(!stillRefused, "a reconnection fixes nothing: the same episode, not logged again")
        o.acknowledged(doc)
        o.acknowledged(removal)
        #expect(o.pending == 0)
    }
}
