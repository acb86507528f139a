import BLETransport
import Testing

@testable import BLEHost

/// The client state machine of Core v5.4, Vol 3, Part F, §3.3 and §3.4, in virtual time: events in, actions out.
@Suite struct ATTClientCoreTests {
    let read3: [UInt8] = [0x0A, 0x03, 0x00]
    let read6: [UInt8] = [0x0A, 0x06, 0x00]

    @Test func oneRequestIsOutstandingAndTheNextWaitsForItsResponse() {
        var core = ATTClientCore()
        #expect(core.request(1, read3, now: .zero) == [.send(read3)])
        #expect(core.request(2, read6, now: .zero) == [])  // §3.3.2: queued, not sent
        #expect(core.waitingCount == 2)
        let response: [UInt8] = [0x0B, 0x41, 0x42]
        #expect(core.receive(response, now: .seconds(1)) == [.complete(1, response), .send(read6)])
        #expect(core.receive([0x0B, 0x99], now: .seconds(2)) == [.complete(2, [0x0B, 0x99])])
        #expect(core.waitingCount == 0 && core.deadline == nil)
    }

    @Test func transactionTimesOutAfterThirtySecondsDropsTheBearerAndFailsEveryWaitingRequest() {
        var core = ATTClientCore()
        _ = core.request(1, read3, now: .seconds(5))
        _ = core.request(2, read6, now: .seconds(6))
        #expect(core.deadline == .seconds(35))
        #expect(core.tick(now: .milliseconds(34_999)) == [])
        #expect(
            core.tick(now: .seconds(35))
                == [.dropBearer, .fail(1, .timeout(.readRequest)), .fail(2, .timeout(.readRequest))])
        #expect(core.counters.timeouts == 1 && core.isClosed)
        // §3.3.3: nothing more on this bearer.
        #expect(core.request(3, read3, now: .seconds(36)) == [.fail(3, .linkClosed)])
        #expect(core.command([0x52, 0x01, 0x00]) == [])
        #expect(core.receive([0x0B, 0x00], now: .seconds(37)) == [])
    }

    @Test func deadlineOfAQueuedRequestStartsWhenItIsSent() {
        var core = ATTClientCore(timeout: .seconds(30))
        _ = core.request(1, read3, now: .zero)
        _ = core.request(2, read6, now: .zero)
        _ = core.receive([0x0B], now: .seconds(20))
        #expect(core.deadline == .seconds(50))
    }

    @Test func mtuIsTheSmallerRxMTUAndAServerMTUBelow23CountsAndIsTakenAs23() {
        var core = ATTClientCore()
        #expect(core.mtu == 23)
        _ = core.request(1, [0x02, 0xF7, 0x00], now: .zero)
        #expect(core.receive([0x03, 0x9E, 0x00], now: .zero) == [.complete(1, [0x03, 0x9E, 0x00])])
        #expect(core.mtu == 158 && core.mtuExchanged)

        var small = ATTClientCore()
        _ = small.request(1, [0x02, 0xF7, 0x00], now: .zero)
        _ = small.receive([0x03, 0x10, 0x00], now: .zero)  // 16 < 23
        #expect(small.mtu == 23 && small.counters.serverMTUBelowMinimum == 1)

        var bad = ATTClientCore()
        _ = bad.request(1, [0x02, 0xF7, 0x00], now: .zero)
        #expect(
            bad.receive([0x03, 0x10], now: .zero)
                == [.fail(1, .malformed(.wrongLength(.exchangeMTUResponse, count: 2)))])
        #expect(bad.mtu == 23 && bad.counters.malformedPDUs == 1)
    }

    @Test func errorResponseFailsTheRequestItNames() {
        var core = ATTClientCore()
        _ = core.request(1, read3, now: .zero)
        let error = ATTErrorResponse(requestOpcode: .readRequest, handle: 3, code: .readNotPermitted)
        #expect(core.receive(error.pdu, now: .zero) == [.fail(1, .errorResponse(error))])
    }

    @Test func errorResponseForAnotherOpcodeIsAProtocolErrorAndTheRequestKeepsWaiting() {
        var core = ATTClientCore()
        _ = core.request(1, read3, now: .zero)
        #expect(core.receive([0x01, 0x12, 0x03, 0x00, 0x03], now: .zero) == [])  // names Write Request
        #expect(core.counters.mismatchedErrorResponses == 1 && core.counters.protocolErrors == 1)
        #expect(core.outstandingOpcode == .readRequest)
        #expect(core.receive([0x0B, 0x01], now: .zero) == [.complete(1, [0x0B, 0x01])])
    }

    @Test func unexpectedResponsesAreCountedAndIgnored() {
        var core = ATTClientCore()
        #expect(core.receive([0x0B, 0x01], now: .zero) == [])  // nothing outstanding
        _ = core.request(1, read3, now: .zero)
        #expect(core.receive([0x13], now: .zero) == [])  // a Write Response to a Read Request
        #expect(core.receive([0x01, 0x0A, 0x03, 0x00], now: .zero) == [])  // short Error Response
        #expect(core.receive([], now: .zero) == [])
        #expect(core.counters.unexpectedResponses == 2 && core.counters.malformedPDUs == 2)
        #expect(core.outstandingOpcode == .readRequest)
    }

    @Test func notificationsAndIndicationsAreDeliveredAndIndicationsConfirmed() {
        var core = ATTClientCore()
        _ = core.request(1, read3, now: .zero)  // they arrive while a request is outstanding, too
        #expect(
            core.receive([0x1B, 0x06, 0x00, 0x34, 0x08], now: .zero)
                == [.notification(ATTHandleValue(handle: 6, value: [0x34, 0x08]))])
        #expect(
            core.receive([0x1D, 0x09, 0x00, 0x94, 0x11], now: .zero)
                == [.indication(ATTHandleValue(handle: 9, value: [0x94, 0x11]))])
        // §3.3.2: no second indication before the confirmation; counted and ignored.
        #expect(core.receive([0x1D, 0x09, 0x00, 0x95, 0x11], now: .zero) == [])
        #expect(core.counters.indicationsWhileUnconfirmed == 1)
        #expect(core.confirmIndication() == [.send([0x1E])])
        #expect(core.confirmIndication() == [])
        #expect(
            core.receive([0x1D, 0x09, 0x00, 0x96, 0x11], now: .zero)
                == [.indication(ATTHandleValue(handle: 9, value: [0x96, 0x11]))])
        #expect(core.receive([0x1B, 0x06], now: .zero) == [])  // notification without a handle
        #expect(core.counters.malformedPDUs == 1 && core.counters.notifications == 1 && core.counters.indications == 2)
    }

    @Test func requestsFromTheServerAreAnsweredRequestNotSupportedAndCommandsIgnored() {
        var core = ATTClientCore()
        #expect(core.receive([0x0A, 0x01, 0x00], now: .zero) == [.send([0x01, 0x0A, 0x00, 0x00, 0x06])])
        #expect(core.receive([0x52, 0x01, 0x00, 0xFF], now: .zero) == [])
        #expect(core.counters.serverRequestsRejected == 1)
    }

    @Test func bearerEndFailsEveryWaitingRequest() {
        var core = ATTClientCore()
        _ = core.request(1, read3, now: .zero)
        _ = core.request(2, read6, now: .zero)
        #expect(core.bearerClosed() == [.fail(1, .linkClosed), .fail(2, .linkClosed)])
        #expect(core.bearerClosed() == [])
        #expect(core.tick(now: .seconds(100)) == [])
    }
}
