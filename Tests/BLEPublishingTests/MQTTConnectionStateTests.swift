import Testing

@testable import BLEPublishing

/// The connection's states as libmosquitto's thread and `run()` report them, without a broker: the orders the two
/// threads can interleave in, each written out.
@Suite struct MQTTConnectionStateTests {
    /// A state in which `run()` has started an attempt whose socket is open.
    static func opened() -> MQTTConnectionState {
        var s = MQTTConnectionState()
        let began = s.begin()
        #expect(began)
        let started = s.startAttempt()
        #expect(started)
        let action = s.connectReturned(opened: true)
        #expect(action == nil)
        return s
    }

    @Test func aSecondRunIsRefusedUntilTheFirstHasEnded() {
        var s = MQTTConnectionState()
        let first = s.begin()
        #expect(first)
        let second = s.begin()
        #expect(!second)
        s.end()
        let third = s.begin()
        #expect(third)
    }

    @Test func publishesAreAdmittedFromRunReadingTheConnackToRunReadingTheEnd() {
        var s = Self.opened()
        #expect(!s.isAdmitted, "no CONNACK yet")
        s.connackReceived()
        #expect(!s.isAdmitted, "run() has not read it")
        let admitted = s.admit()
        #expect(admitted)
        #expect(s.isAdmitted)
        s.endTold()
        #expect(s.isAdmitted, "run() has not read the end: libmosquitto refuses on a closed socket meanwhile")
        s.withdraw()
        #expect(!s.isAdmitted)
        let told = s.loopReturned()
        #expect(told, "libmosquitto told of the end itself")
        #expect(s.attempt == .closed(answered: true, deadlinePassed: false))
    }

    @Test func aConnackReadAfterTheSocketClosedAdmitsNothing() {
        var s = Self.opened()
        s.connackReceived()
        let told = s.loopReturned()
        #expect(!told, "a socket that just closed: no on_disconnect")
        let admitted = s.admit()
        #expect(!admitted)
        #expect(!s.isAdmitted)
    }

    @Test func aStopAskedForWhileDiallingIsCarriedOutOnceTheSocketOpensAndOnlyOnce() {
        var s = MQTTConnectionState()
        _ = s.begin()
        _ = s.startAttempt()
        let whileDialling = s.requestStop()
        #expect(whileDialling == nil, "no socket to send DISCONNECT on")
        #expect(s.isStopRequested)
        let onOpening = s.connectReturned(opened: true)
        #expect(onOpening == .sendDisconnect)
        let again = s.requestStop()
        #expect(again == nil, "sent already")
        let restarted = s.startAttempt()
        #expect(!restarted, "no new attempt after a stop")
    }

    @Test func aStopOnAnOpenConnectionSendsDisconnectOnce() {
        var s = Self.opened()
        s.connackReceived()
        _ = s.admit()
        let stop = s.requestStop()
        #expect(stop == .sendDisconnect)
        let again = s.requestStop()
        #expect(again == nil)
        #expect(s.isAdmitted, "publishes go on until run() reads the end")
    }

    @Test func theConnectDeadlineCutsOnlyTheSpanBeforeTheConnack() {
        var s = MQTTConnectionState()
        _ = s.begin()
        _ = s.startAttempt()
        #expect(s.isConnecting)
        let cut = s.connectDeadlinePassed()
        #expect(cut == .shutDownSocket, "the blocking connect is cut short")
        let afterFailure = s.connectReturned(opened: false)
        #expect(afterFailure == nil)
        #expect(s.attempt == .closed(answered: false, deadlinePassed: true))
        #expect(s.facts.deadlinePassed)

        var t = Self.opened()
        let cutAwaiting = t.connectDeadlinePassed()
        #expect(cutAwaiting == .shutDownSocket, "TLS handshake or CONNECT unanswered")
        #expect(t.facts == (answered: false, deadlinePassed: true))
        var u = Self.opened()
        u.connackReceived()
        #expect(!u.isConnecting)
        let cutAnswered = u.connectDeadlinePassed()
        #expect(cutAnswered == nil, "answered in time: the deadline is moot")
        #expect(u.facts == (answered: true, deadlinePassed: false))
    }

    @Test func aNewAttemptForgetsTheLastOne() {
        var s = Self.opened()
        _ = s.connectDeadlinePassed()
        s.endTold()
        _ = s.loopReturned()
        let restarted = s.startAttempt()
        #expect(restarted)
        #expect(s.attempt == .dialling(.init()))
        #expect(s.facts == (answered: false, deadlinePassed: false))
    }
}
