import Testing

@testable import BLEGateway

/// The own-status echo (MQTT 3.1.1): literal events in, what the gateway reports out.
struct StatusEchoTests {
    @Test func theOnlineStatusOfThisConnectionComingBackConfirmsAndNothingIsReported() {
        var e = StatusEcho()
        e.connected(lastSeq: 41, now: 100)
        #expect(e.received(ownRun: true, seq: 42, online: true) == nil)
        #expect(e.state == .confirmed)
        #expect(e.deadline(connectedAt: 100, now: 110) == nil)
        #expect(!e.suspected)
    }

    @Test func anOldRetainedStatusAnotherRunsOrAnOfflineOneDoesNotCount() {
        var e = StatusEcho()
        e.connected(lastSeq: 41, now: 100)
        #expect(e.received(ownRun: true, seq: 41, online: true) == nil, "retained from before this connection")
        #expect(e.received(ownRun: false, seq: 99, online: true) == nil, "an earlier run's")
        #expect(e.received(ownRun: true, seq: 99, online: false) == nil, "offline")
        #expect(e.received(ownRun: true, seq: nil, online: true) == nil, "the last will has no seq")
        #expect(e.deadline(connectedAt: 100, now: 110) == .suspect)
        #expect(e.suspected && e.episodes == 1)
    }

    @Test func aSuspicionLastsAcrossReconnectionsUntilAnEchoClearsItOnce() {
        var e = StatusEcho()
        e.connected(lastSeq: 10, now: 0)
        #expect(e.deadline(connectedAt: 0, now: 10) == .suspect)
        e.disconnected()
        e.connected(lastSeq: 20, now: 30)
        #expect(e.suspected, "a reconnection alone does not clear it")
        #expect(e.deadline(connectedAt: 30, now: 40) == nil, "nor is it reported again")
        #expect(e.received(ownRun: true, seq: 15, online: true) == nil, "older than this connection's status")
        #expect(e.received(ownRun: true, seq: 21, online: true) == .clear)
        #expect(!e.suspected && e.episodes == 1)
    }

    @Test func theDeadlineOfAnEarlierConnectionDoesNotJudgeTheNextOne() {
        var e = StatusEcho()
        e.connected(lastSeq: 1, now: 0)
        e.disconnected()
        e.connected(lastSeq: 5, now: 8)
        #expect(e.deadline(connectedAt: 0, now: 10) == nil)
        #expect(e.deadline(connectedAt: 8, now: 18) == .suspect)
    }
}
