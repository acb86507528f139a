/// The health report's two rates: readings the broker acknowledged, and advertising reports the controller gave,
/// each per second since the report before. Pure: given the running totals and the time of each report.
struct HealthRates: Equatable, Sendable {
    private var acknowledged: UInt64 = 0
    private var reports = 0
    private var at: Duration

    init(start: Duration) { at = start }

    typealias Rates = (publish: Double, reports: Double)

    /// The rates since the last call (or the start), from the totals now.
    mutating func next(acknowledged ack: UInt64, reports count: Int, at now: Duration) -> Rates {
        // A millisecond at least: two reports in the same instant (a virtual clock) give a finite rate.
        let elapsed = max((now - at).seconds, 0.001)
        let publish = Double(ack &- acknowledged) / elapsed
        // A new controller session counts again from zero: a total that went down is a restart, not a negative rate.
        let reportRate = Double(max(0, count - reports)) / elapsed
        acknowledged = ack
        reports = count
        at = now
        return (publish, reportRate)
    }
}
