import Foundation

/// A tag's position followed without the quiet filter's lag (docs/PRESENCE.md, "Settled and unsettled tags"): two
/// Kalman filters side by side over the same fixes, one for a tag standing still (drifting 0.1 m/s) and one for a
/// tag walking (`walkingSpeedMPS`), and a CUSUM of their log-likelihood ratio choosing between them (Page's test:
/// the sum of the evidence for walking, floored at zero, against a threshold).
///
/// `PositionFilter` learns that a tag walks only when two fixes in a row fall outside the quiet bounds, which at a
/// walk's start takes 4–5 s while its estimate stays where the walk began; in the office's hour its position was
/// closest to where a walker had been 5 s before. Here the walking model has followed the fixes all along, so the
/// moment the evidence tips, the estimate is already where the tag is (walkers' room right 83.9 % → 88.7 % in the
/// office's hour). It also follows the excursions of a tag standing 1–3 m from a wall, so the engine uses it only for
/// tags that changed room lately (`settle_s`).
struct FollowingFilter: Sendable, Equatable {
    var quiet: PlanarEstimate
    var walking: PlanarEstimate
    /// The CUSUM: the walking model's log-likelihood over the quiet one's, summed, never below zero.
    var evidence = 0.0
    var at: Double
    private(set) var moving = false

    /// Evidence (natural log of the likelihood ratio) at which the tag is walking: about e⁴ ≈ 55 times likelier.
    static let threshold = 4.0

    var x: Double { moving ? walking.x : quiet.x }
    var y: Double { moving ? walking.y : quiet.y }
    var variance: Double { moving ? walking.variance : quiet.variance }
    var error: Double { (2 * variance).squareRoot() }

    init(fix: PositionSolver.Fix, now: Double) {
        quiet = PlanarEstimate(fix)
        walking = quiet
        at = now
    }

    /// One fix, with its own error as the measurement's.
    mutating func update(_ fix: PositionSolver.Fix, now: Double, speed: Double) {
        let dt = max(now - at, 0)
        quiet.variance += PositionFilter.quietSpeed * PositionFilter.quietSpeed * dt
        walking.variance += speed * speed * dt
        evidence = max(0, evidence + walking.logLikelihood(of: fix) - quiet.logLikelihood(of: fix))
        quiet.correct(by: fix)
        walking.correct(by: fix)
        if moving {
            // The quiet model has fitted as well as the walking one since the walk ended.
            if evidence == 0 { moving = false }
        } else if evidence > Self.threshold {
            moving = true
        }
        // While walking, the quiet model starts again from where the tag is, so that a stop is seen at once.
        if moving { quiet = walking }
        at = now
    }

    /// Time passes without a trusted fix: both estimates are kept, their uncertainty grows.
    mutating func inflate(now: Double, speed: Double) {
        let dt = max(now - at, 0)
        quiet.variance += speed * speed * dt
        walking.variance += speed * speed * dt
        at = now
    }
}
