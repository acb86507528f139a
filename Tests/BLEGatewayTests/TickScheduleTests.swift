import Testing

@testable import BLEGateway

/// The tick loop's schedule and the health report's rates: literal times in, what is due and the rates out.
struct TickScheduleTests {
    @Test func summariesComeEveryIntervalAndTheFirstHealthReportWithinFiveSeconds() {
        var s = TickSchedule(start: .seconds(100), summaryEvery: .seconds(10), healthEvery: .seconds(60))
        #expect(s.next == .seconds(105))
        #expect(s.take(at: .seconds(105)) == .health)
        #expect(s.next == .seconds(110))
        #expect(s.take(at: .seconds(110)) == .summaries)
        #expect(s.take(at: .seconds(119)) == [])
        #expect(s.take(at: .seconds(120)) == .summaries)
        #expect(s.nextHealth == .seconds(165))
    }

    @Test func aHealthIntervalShorterThanFiveSecondsStartsAtItsOwnInterval() {
        let s = TickSchedule(start: .zero, summaryEvery: .seconds(10), healthEvery: .seconds(2))
        #expect(s.nextHealth == .seconds(2))
    }

    @Test func bothComeDueAtTheSameInstant() {
        var s = TickSchedule(start: .zero, summaryEvery: .seconds(5), healthEvery: .seconds(5))
        #expect(s.take(at: .seconds(5)) == [.summaries, .health])
        #expect(s.next == .seconds(10))
    }

    @Test func aRetunedIntervalMovesThePendingDeadlineByTheDifference() {
        var s = TickSchedule(start: .zero, summaryEvery: .seconds(60), healthEvery: .seconds(60))
        _ = s.take(at: .seconds(5))  // the first health report
        s.retune(summaryEvery: .seconds(10), healthEvery: .seconds(30))
        #expect(s.nextSummary == .seconds(10), "60 s after start became 10 s after start")
        #expect(s.nextHealth == .seconds(35), "65 s became 35 s")
        #expect(s.take(at: .seconds(10)) == .summaries)
        #expect(s.nextSummary == .seconds(20))
    }

    @Test func retuningToTheSameIntervalsChangesNothing() {
        var s = TickSchedule(start: .seconds(3), summaryEvery: .seconds(10), healthEvery: .seconds(60))
        let before = s
        s.retune(summaryEvery: .seconds(10), healthEvery: .seconds(60))
        #expect(s == before)
    }

    @Test func workThatFellBehindIsDoneOnceAndTheNextComesAnIntervalFromNow() {
        var s = TickSchedule(start: .zero, summaryEvery: .seconds(10), healthEvery: .seconds(60))
        // Suspended from 0 to 95 s: nine summaries and a health report were missed.
        #expect(s.take(at: .seconds(95)) == [.summaries, .health])
        #expect(s.nextSummary == .seconds(105))
        #expect(s.nextHealth == .seconds(155))
        #expect(s.take(at: .seconds(100)) == [], "no burst of the missed ones")
    }

    @Test func restingSummariesAreNeverDueAndResumeAWholeIntervalAfterTheirRest() {
        var s = TickSchedule(start: .zero, summaryEvery: .seconds(1), healthEvery: .seconds(30))
        #expect(s.take(at: .seconds(1)) == .summaries)
        s.restSummaries()
        #expect(s.next == .seconds(5), "only the first health report")
        #expect(s.take(at: .seconds(5)) == .health)
        s.retune(summaryEvery: .seconds(2), healthEvery: .seconds(30))
        #expect(s.nextSummary == nil, "a new interval does not end the rest")
        #expect(s.take(at: .seconds(20)) == [])
        s.resumeSummaries(at: .milliseconds(20_400))
        #expect(s.nextSummary == .milliseconds(22_400))
        s.resumeSummaries(at: .seconds(21))
        #expect(s.nextSummary == .milliseconds(22_400), "summaries under way keep their schedule")
        #expect(s.take(at: .milliseconds(22_400)) == .summaries)
    }

    @Test func ratesArePerSecondSinceTheReportBefore() {
        var r = HealthRates(start: .seconds(0))
        let first = r.next(acknowledged: 600, reports: 3000, at: .seconds(60))
        #expect(first.publish == 10 && first.reports == 50)
        let second = r.next(acknowledged: 660, reports: 3030, at: .seconds(90))
        #expect(second.publish == 2 && second.reports == 1)
    }

    @Test func aReportTotalThatWentDownIsANewSessionNotANegativeRate() {
        var r = HealthRates(start: .seconds(0))
        _ = r.next(acknowledged: 10, reports: 500, at: .seconds(10))
        let restarted = r.next(acknowledged: 20, reports: 40, at: .seconds(20))
        #expect(restarted.reports == 0)
        #expect(restarted.publish == 1)
        let after = r.next(acknowledged: 20, reports: 90, at: .seconds(30))
        #expect(after.reports == 5, "counted from the new session's total")
    }

    @Test func twoReportsInTheSameInstantGiveAFiniteRate() {
        var r = HealthRates(start: .seconds(7))
        let same = r.next(acknowledged: 1, reports: 1, at: .seconds(7))
        #expect(same.publish == 1000 && same.reports == 1000)
    }
}
