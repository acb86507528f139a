/// `publishing.raw_max_per_s`: the raw stream's token bucket, with a burst of one second's worth. Shared by every
/// device, so one chatty advertiser cannot flood the broker; the runtime and the explainer keep one each.
struct RawRateBucket: Sendable, Equatable {
    private var tokens: Double?
    private var last: Duration = .zero
    /// Sightings not put on the raw stream because the bucket was empty (health `scan.raw_rate_limited`).
    private(set) var limited = 0

    /// Whether a sighting at `now` may go on the raw stream; starts full.
    mutating func take(rate: Double, at now: Duration) -> Bool {
        let t = min(rate, tokens.map { $0 + (now - last).seconds * rate } ?? rate)
        last = now
        guard t >= 1 else {
            tokens = t
            limited += 1
            return false
        }
        tokens = t - 1
        return true
    }
}
