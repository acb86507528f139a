import BLEDomain
import Testing

@testable import BLEGateway

/// The adapter states the gateway publishes: literal reports in, what is news and since when out.
struct AdapterStatesTests {
    static func report(
        _ state: AdapterReport.State, reason: String? = nil, slot: AdapterRoles.Slot? = nil
    ) -> AdapterReport {
        var r = AdapterReport(state: state, device: "hci0", mode: .exclusive, reason: reason)
        if let slot {
            r.slot = slot
            r.scope = .slot
        }
        return r
    }

    @Test func theFirstReportIsNewsSinceItsOwnTime() {
        var a = AdapterStates()
        #expect(a.current == nil && !a.scanning)
        #expect(a.record(Self.report(.poweredOn), at: 100) == .init(since: 100, scanningAgain: true))
        #expect(a.scanning)
    }

    @Test func aRepeatedReportIsNoNews() {
        var a = AdapterStates()
        _ = a.record(Self.report(.resetting, reason: "hardware error"), at: 100)
        #expect(a.record(Self.report(.resetting, reason: "hardware error"), at: 105) == nil)
    }

    @Test func aNewReasonInTheSameStateIsNewsThatKeepsItsSince() {
        var a = AdapterStates()
        _ = a.record(Self.report(.resetting, reason: "hardware error"), at: 100)
        #expect(a.record(Self.report(.resetting, reason: "reset failed"), at: 110) == .init(since: 100))
    }

    @Test func poweredOnAgainAfterAnotherStateIsScanningAgain() {
        var a = AdapterStates()
        _ = a.record(Self.report(.poweredOn), at: 100)
        #expect(a.record(Self.report(.resetting), at: 120) == .init(since: 120))
        #expect(!a.scanning)
        #expect(a.record(Self.report(.poweredOn), at: 125) == .init(since: 125, scanningAgain: true))
    }

    @Test func poweredOnWithNewDetailsIsNotScanningAgain() {
        var a = AdapterStates()
        _ = a.record(Self.report(.poweredOn), at: 100)
        var detailed = Self.report(.poweredOn)
        detailed.address = "00:11:22:33:44:55"
        #expect(a.record(detailed, at: 101) == .init(since: 100, scanningAgain: false))
    }

    @Test func eachSlotKeepsItsOwnSinceAndLeavesTheGatewaysAdapterAlone() {
        var a = AdapterStates()
        _ = a.record(Self.report(.poweredOn), at: 100)
        #expect(a.record(Self.report(.poweredOn, slot: .primary), at: 100) == .init(since: 100))
        #expect(a.record(Self.report(.unauthorized, slot: .secondary), at: 101) == .init(since: 101))
        #expect(a.record(Self.report(.unauthorized, reason: "EPERM", slot: .secondary), at: 130) == .init(since: 101))
        #expect(a.record(Self.report(.poweredOn, slot: .primary), at: 140) == nil)
        #expect(a.current == Self.report(.poweredOn), "a slot's report is not the gateway's")
    }
}
