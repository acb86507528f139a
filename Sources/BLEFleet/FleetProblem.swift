/// Something an operator should look at, in the order the overview sorts gateways (worst first).
public struct FleetProblem: Sendable, Encodable, Equatable, Comparable {
    /// Higher is worse.
    public var severity: Int
    public var text: String

    public static func < (a: FleetProblem, b: FleetProblem) -> Bool { a.severity < b.severity }

    static func offline(_ reason: String?) -> FleetProblem {
        FleetProblem(severity: 100, text: "offline" + (reason.map { ": \($0)" } ?? ""))
    }
    static func adapter(_ state: String, _ reason: String?) -> FleetProblem {
        FleetProblem(severity: 80, text: "adapter \(state)" + (reason.map { ": \($0)" } ?? ""))
    }
    static func configRejected(_ errors: [String]) -> FleetProblem {
        FleetProblem(severity: 60, text: "configuration rejected" + (errors.first.map { ": \($0)" } ?? ""))
    }
    static func spoolGrowing(_ perMin: Double) -> FleetProblem {
        FleetProblem(severity: 50, text: "spool growing (\(Int(perMin.rounded())) readings/min)")
    }
    static func brokerDisconnected() -> FleetProblem {
        FleetProblem(severity: 45, text: "gateway reports its broker connection down")
    }
    static func drops(_ count: Int) -> FleetProblem { FleetProblem(severity: 40, text: "\(count) samples dropped") }
    static func clock(_ offset: Double, synchronized: Bool) -> FleetProblem {
        let s = Int(abs(offset).rounded())
        let way = offset < 0 ? "behind" : "ahead of"
        let note =
            synchronized
            ? "although it says it is synchronised" : "not synchronised; presence places its readings by their arrival"
        return FleetProblem(severity: 35, text: "clock \(s) s \(way) the fleet service's (\(note))")
    }
    static func gaps(_ missing: Int) -> FleetProblem {
        FleetProblem(severity: 30, text: "\(missing) readings lost (seq gaps)")
    }
    static func invalid(_ count: Int) -> FleetProblem {
        FleetProblem(severity: 20, text: "\(count) payloads not matching schema/v1")
    }
    static let noStatus = FleetProblem(severity: 10, text: "no status yet")
}

extension FleetGateway {
    /// A spool that grew faster than this over the recent readings is a problem (the broker is not keeping up).
    static let spoolGrowthThresholdPerMin = 10.0

    /// Every problem of this gateway, worst first.
    public var problems: [FleetProblem] {
        var out: [FleetProblem] = []
        switch status {
        case "offline": out.append(.offline(statusReason))
        case "online": break
        default: out.append(.noStatus)
        }
        if let adapter, adapter.state != "poweredOn" { out.append(.adapter(adapter.state, adapter.reason)) }
        if let config, config.status == "rejected" { out.append(.configRejected(config.errors)) }
        if let trend = spoolTrendPerMin, trend > Self.spoolGrowthThresholdPerMin { out.append(.spoolGrowing(trend)) }
        if status == "online", let health, !health.connected { out.append(.brokerDisconnected()) }
        if let dropped = health?.droppedSamples, dropped > 0 { out.append(.drops(dropped)) }
        if let offset = clock.seconds, abs(offset) > GatewayClockOffset.problemAboveS {
            out.append(.clock(offset, synchronized: clock.synchronized ?? false))
        }
        if seq.missing > 0 { out.append(.gaps(seq.missing)) }
        if invalid > 0 { out.append(.invalid(invalid)) }
        return out.sorted(by: >)
    }
}
