import BLETransport
import Testing

@testable import BLEHCI

/// The command flow in virtual time: the state machine is fed events and times by hand.
@Suite struct HCICommandFlowTests {
    typealias Flow = HCICommandFlow

    func event(_ h4: [UInt8]) -> HCIEvent { parseEvent(h4)! }

    func sends(_ actions: [Flow.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(_, let p) = $0 { p.h4Bytes } else { nil } }
    }

    func submit<C: HCICommand>(_ f: inout Flow, _ c: C, now: Duration = .zero) -> (Flow.RequestID, [Flow.Action]) {
        let id = f.makeRequestID()
        return (id, f.submit(id, packet: c.packet, opcode: C.opcode, completion: C.completion, now: now))
    }

    @Test func sendsOneCommandAtFirstAndQueuesTheNextUntilCreditReturns() {
        var f = Flow()
        let (_, a1) = submit(&f, ResetCommand())
        let (_, a2) = submit(&f, ReadBDADDRCommand())
        #expect(sends(a1) == [[0x01, 0x03, 0x0C, 0x00]])
        #expect(sends(a2).isEmpty)
        #expect(f.queuedCount == 1)
        let a3 = f.receive(event([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]), now: .milliseconds(5))
        #expect(sends(a3) == [[0x01, 0x09, 0x10, 0x00]])
    }

    @Test func zeroCreditHoldsTheQueueUntilANoOperationGrantsMore() {
        var f = Flow()
        _ = submit(&f, ResetCommand())
        _ = submit(&f, ReadBDADDRCommand())
        // Answer to Reset granting no further commands.
        let a = f.receive(event([0x04, 0x0E, 0x04, 0x00, 0x03, 0x0C, 0x00]), now: .zero)
        #expect(sends(a).isEmpty)
        #expect(f.credits == 0)
        // Command Complete for opcode 0x0000: credit only.
        let b = f.receive(event([0x04, 0x0E, 0x03, 0x01, 0x00, 0x00]), now: .zero)
        #expect(sends(b) == [[0x01, 0x09, 0x10, 0x00]])
        #expect(f.counters.unmatched == 0)
    }

    @Test func answersAreMatchedByOpcodeNotByOrder() {
        var f = Flow()
        // Controller grants 2 credits.
        _ = f.receive(event([0x04, 0x0E, 0x03, 0x02, 0x00, 0x00]), now: .zero)
        let (scanID, _) = submit(&f, LESetScanEnableCommand(enable: true))
        let (addrID, _) = submit(&f, ReadBDADDRCommand())
        #expect(f.outstandingCount == 2)
        let a = f.receive(event([0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00, 1, 2, 3, 4, 5, 6]), now: .zero)
        guard case .complete(let id, .commandComplete(let rp))? = a.first else {
            Issue.record("no completion")
            return
        }
        #expect(id == addrID)
        #expect(Array(rp) == [0x00, 1, 2, 3, 4, 5, 6])
        let b = f.receive(event([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x0C]), now: .zero)
        guard case .complete(let id2, .commandComplete(let rp2))? = b.first else {
            Issue.record("no completion")
            return
        }
        #expect(id2 == scanID)
        #expect(Array(rp2) == [0x0C])
    }

    @Test func commandStatusEndsACommandThatCompletesLater() {
        var f = Flow()
        let create = LECreateConnectionCommand(peerAddressType: .public, peerAddress: BDAddress(rawValue: 1))
        let (id, _) = submit(&f, create)
        let a = f.receive(event([0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20]), now: .zero)
        guard case .complete(let got, .commandStatus(let s))? = a.first else {
            Issue.record("no status")
            return
        }
        #expect(got == id)
        #expect(s == .success)
    }

    @Test func commandStatusWithAnErrorEndsACommandThatExpectedCommandComplete() {
        var f = Flow()
        let (id, _) = submit(&f, LESetExtendedScanEnableCommand(enable: true))
        let a = f.receive(event([0x04, 0x0F, 0x04, 0x01, 0x01, 0x42, 0x20]), now: .zero)
        guard case .complete(let got, .commandStatus(let s))? = a.first else {
            Issue.record("no status")
            return
        }
        #expect(got == id)
        #expect(s == .unknownCommand)
    }

    @Test func unansweredCommandTimesOutAtTheBoundAndTheQueueMovesOn() {
        var f = Flow(timeout: .seconds(2))
        let (id, _) = submit(&f, LESetScanEnableCommand(enable: true), now: .seconds(10))
        _ = submit(&f, LESetScanEnableCommand(enable: false), now: .seconds(10))
        #expect(f.nextDeadline == .seconds(12))
        #expect(f.tick(now: .milliseconds(11_999)).isEmpty)
        let a = f.tick(now: .seconds(12))
        var reported = false
        var failed = false
        for action in a {
            switch action {
            case .reportTimeout(let op, let after, let sentAt):
                reported = op == .leSetScanEnable && after == .seconds(2) && sentAt == .seconds(10)
            case .fail(let got, let e): failed = got == id && e.code == .timedOut
            default: break
            }
        }
        #expect(reported)
        #expect(failed)
        #expect(sends(a) == [[0x01, 0x0C, 0x20, 0x02, 0x00, 0x00]])
        #expect(f.counters.timedOut == 1)
    }

    @Test func lateAnswerAfterATimeoutIsCountedNotMisattributed() {
        var f = Flow(timeout: .seconds(2))
        _ = submit(&f, ResetCommand())
        _ = f.tick(now: .seconds(2))
        let (id2, _) = submit(&f, ReadBDADDRCommand(), now: .seconds(2))
        let a = f.receive(event([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]), now: .seconds(3))
        #expect(a.isEmpty)
        #expect(f.counters.unmatched == 1)
        #expect(f.outstandingCount == 1)
        _ = id2
    }

    @Test func cancelledOutstandingCommandStillConsumesItsAnswer() {
        var f = Flow()
        _ = f.receive(event([0x04, 0x0E, 0x03, 0x02, 0x00, 0x00]), now: .zero)
        let (first, _) = submit(&f, LESetScanEnableCommand(enable: true))
        let (second, _) = submit(&f, LESetScanEnableCommand(enable: false))
        f.cancel(first)
        let a = f.receive(event([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]), now: .zero)
        #expect(a.isEmpty)
        let b = f.receive(event([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]), now: .zero)
        guard case .complete(let id, _)? = b.first else {
            Issue.record("no completion")
            return
        }
        #expect(id == second)
    }

    @Test func closeFailsEverythingAndLaterSubmissions() {
        var f = Flow()
        let (a, _) = submit(&f, ResetCommand())
        let (b, _) = submit(&f, ReadBDADDRCommand())
        let closed = f.close(.transportClosed(nil))
        let failed = closed.compactMap { if case .fail(let id, _) = $0 { id } else { nil } }
        #expect(Set(failed) == [a, b])
        let (_, later) = submit(&f, ResetCommand())
        guard case .fail(_, let e)? = later.first else {
            Issue.record("not failed")
            return
        }
        #expect(e.code == .transportClosed)
        #expect(e.opcode == .reset)
    }

    @Test func sendFailureGivesTheCreditBack() {
        var f = Flow()
        let (a, _) = submit(&f, ResetCommand())
        _ = submit(&f, ReadBDADDRCommand())
        let r = f.sendFailed(a, .sendFailed(.reset, "EPIPE"), now: .zero)
        #expect(sends(r) == [[0x01, 0x09, 0x10, 0x00]])
    }
}
