/// How far a gateway's clock is from the fleet service's, learnt from when its readings arrive.
///
/// A Pi has no real-time clock: until NTP answers it starts from the time it last saved, minutes or days behind, and
/// says so (`clock_synced: false`). Its readings' own `ts` then cannot be compared with another gateway's, and
/// presence, which combines the gateways' readings of a tag by their `ts`, would leave it out (behind) or leave every
/// other gateway out (ahead).
///
/// A live reading's `ts − arrival` is the offset less the delivery delay, and a delay is never negative: the highest
/// value seen is the best estimate. It follows a higher value at once, and a lower one only slowly
/// (`fallPerSecond`), because a backlog the spool replays after an outage arrives late with old times, which must
/// not pass for a slow clock. A new run (the process started again) or a change of `clock_synced` (NTP stepped the
/// clock) starts the estimate again; retained messages and the last will (whose time is its connection's) are not
/// live and are not taken.
public struct GatewayClockOffset: Sendable, Equatable, Encodable {
    /// Gateway clock minus the service's, in seconds; nil before a live reading.
    public private(set) var seconds: Double?
    /// What the gateway says of its clock, in the latest reading.
    public private(set) var synchronized: Bool?
    private var run: String?
    private var at = 0.0

    /// How fast the estimate may fall, in seconds per second: a clock drifts by far less; a backlog being replayed
    /// (minutes behind) barely moves it.
    static let fallPerSecond = 1.0 / 60

    /// Beyond this (either way) the gateway is a fleet problem: presence tolerates a few seconds (`window_s`).
    public static let problemAboveS = 5.0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case seconds = "offset_s"
        case synchronized
    }

    /// A live reading from the gateway: its own `ts`, the service's time of arrival, its run and `clock_synced`.
    public mutating func observe(ts: Double, receivedAt: Double, run: String, synchronized: Bool) {
        let offset = ts - receivedAt
        if let s = seconds, self.run == run, self.synchronized == synchronized {
            seconds = max(offset, s - max(0, receivedAt - at) * Self.fallPerSecond)
        } else {
            seconds = offset
        }
        self.run = run
        self.synchronized = synchronized
        at = receivedAt
    }

    /// A reading's time on the service's clock: its own `ts` when the gateway's clock is synchronised (then the
    /// replayed backlog keeps its true age), otherwise `ts` less the offset.
    public func serviceTime(of ts: Double, synchronized: Bool) -> Double {
        guard !synchronized, let s = seconds else { return ts }
        return ts - s
    }
}
