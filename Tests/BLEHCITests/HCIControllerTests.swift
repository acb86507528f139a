import BLETestSupport
import BLETransport
import Testing

@testable import BLEHCI

@Suite struct HCIControllerTests {
    let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]

    @Test func executeSendsTheCommandBytesAndReturnsTheParsedAnswer() async throws {
        let t = ScriptedHCITransport(
            script: [
                .init(reset, [resetComplete]),
                .init(
                    [0x01, 0x09, 0x10, 0x00],
                    [[0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00, 0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00]]),
            ], feedOneByteAtATime: true)
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        try await controller.execute(ResetCommand())
        let addr = try await controller.execute(ReadBDADDRCommand())
        #expect(addr == BDAddress("00:1A:7D:DA:71:13"))
        #expect(t.mismatches.isEmpty)
        #expect(t.remaining == 0)
        runner.cancel()
        try? await runner.value
    }

    /// A test whose host sends something other than its script must fail there, not wait for an answer forever.
    @Test func aCommandOffTheScriptFailsTheHostInsteadOfHangingIt() async throws {
        let t = ScriptedHCITransport(script: [.init(reset, [resetComplete])])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        await #expect(throws: (any Error).self) { try await controller.execute(ReadBDADDRCommand()) }
        #expect(t.mismatches == ["expected 01 03 0C 00, got 01 09 10 00"])
        runner.cancel()
        try? await runner.value
    }

    @Test func failingCommandThrowsAnErrorNamingCommandAndStatus() async throws {
        let t = ScriptedHCITransport(script: [
            .init([0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], [[0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x0C]])
        ])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        do {
            try await controller.execute(LESetScanEnableCommand(enable: true))
            Issue.record("did not throw")
        } catch let e as HCIError {
            #expect("\(e)" == "LE Set Scan Enable (0x200C) failed: HCI status 0x0C Command Disallowed")
        }
        runner.cancel()
        try? await runner.value
    }

    /// The timeout watcher sleeps until the outstanding command's deadline, not in ticks: the command fails at
    /// exactly `commandTimeout`, and with nothing outstanding no timer is left (an idle controller costs nothing).
    @Test func aStuckControllerIsDetectedAtTheCommandsDeadlineAndThenNoTimerRuns() async throws {
        let clock = ManualClock()
        let t = ScriptedHCITransport(script: [.init(reset, [])])  // the controller never answers
        let controller = HCIController(transport: t, clock: clock)
        let events = controller.events()
        let runner = Task { try await controller.run() }
        #expect(await eventually { clock.sleeperCount == 0 }, "no command, no timer")
        let call = Task { try await controller.execute(ResetCommand()) }
        let watcher = Task { () -> HCIOpcode? in
            for await e in events.ignoringErrors { if case .commandTimedOut(let op, _, _) = e { return op } }
            return nil
        }
        #expect(await eventually { t.sent.count == 1 })
        #expect(await eventually { clock.sleeperCount == 1 }, "one wait, for the Reset's deadline")
        clock.advance(by: .milliseconds(1999))
        #expect(controller.statistics.commands.timedOut == 0)
        #expect(clock.sleeperCount == 1, "a millisecond before the deadline, still waiting")
        clock.advance(by: .milliseconds(1))
        #expect(await eventually { controller.statistics.commands.timedOut == 1 })
        #expect(await eventually { clock.sleeperCount == 0 }, "nothing outstanding: no timer")
        guard case .failure(let e as HCIError) = await call.result else {
            Issue.record("did not fail")
            return
        }
        #expect(e.code == .timedOut)
        #expect(e.opcode == .reset)
        #expect(await watcher.value == .reset)
        runner.cancel()
        try? await runner.value
    }

    @Test func otherEventsGoToSubscribersAndReportsOnlyToThoseThatAskedForThem() async throws {
        let t = ScriptedHCITransport(script: [])
        let controller = HCIController(transport: t, clock: ManualClock())
        let events = controller.events(includingReports: true)
        let stateOnly = controller.events()
        let runner = Task { try await controller.run() }
        t.inject([0x04, 0x10, 0x01, 0x03])  // Hardware Error
        t.inject([0x04, 0x3E, 0x03, 0x02, 0x01, 0x00])  // advertising report cut short
        t.inject([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13])  // Disconnection Complete
        t.end()
        func kinds(_ q: StageQueue<HCIControllerEvent>) async -> [String] {
            var kinds: [String] = []
            for await e in q.ignoringErrors {
                switch e {
                case .event(.hardwareError(let code)): kinds.append("hw\(code)")
                case .event(.disconnectionComplete(let d)): kinds.append("disc\(d.reason.rawValue)")
                case .malformed: kinds.append("malformed")
                case .transportEnded(let err): kinds.append(err == nil ? "end" : "error")
                default: kinds.append("other")
                }
            }
            return kinds
        }
        #expect(await kinds(events) == ["hw3", "malformed", "disc19", "end"])
        #expect(await kinds(stateOnly) == ["hw3", "disc19", "end"])
        try await runner.value
        #expect(controller.statistics.malformedPackets == 1)
    }

    @Test func transportEndFailsWaitingCommandsAndLaterOnes() async throws {
        let t = ScriptedHCITransport(script: [.init(reset, [])])
        let controller = HCIController(transport: t, clock: ManualClock())
        let runner = Task { try await controller.run() }
        let call = Task { try await controller.execute(ResetCommand()) }
        #expect(await eventually { t.sent.count == 1 })
        t.end()
        try await runner.value
        guard case .failure(let e as HCIError) = await call.result else {
            Issue.record("did not fail")
            return
        }
        #expect(e.code == .transportClosed)
        await #expect(throws: HCIError.self) { try await controller.execute(ResetCommand()) }
    }

    @Test func transportWithoutSendFailsCommandsAtOnce() async throws {
        let t = ScriptedHCITransport(script: [], sendSupported: false)
        let controller = HCIController(transport: t, clock: ManualClock())
        do {
            try await controller.execute(ResetCommand())
            Issue.record("did not throw")
        } catch let e as HCIError {
            #expect(e.code == .sendFailed)
            #expect(e.opcode == .reset)
        }
    }

    @Test func cancellingAWaitingCallEndsItWithoutDisturbingTheNext() async throws {
        let t = ScriptedHCITransport(script: [
            .init(reset, []),
            .init(reset, [resetComplete]),
        ])
        let clock = ManualClock()
        let controller = HCIController(transport: t, clock: clock)
        let runner = Task { try await controller.run() }
        let first = Task { try await controller.execute(ResetCommand()) }
        #expect(await eventually { t.sent.count == 1 })
        first.cancel()
        guard case .failure(let e) = await first.result else {
            Issue.record("not cancelled")
            return
        }
        #expect(e is CancellationError)
        // The cancelled Reset still holds the credit until it is answered or times out.
        let second = Task { try await controller.execute(ResetCommand()) }
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .seconds(2))
        try await second.value
        #expect(t.mismatches.isEmpty)
        runner.cancel()
        try? await runner.value
    }
}
