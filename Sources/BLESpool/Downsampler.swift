/// Decides which samples downsampling removes, apart from any I/O: fed the samples oldest first, it keeps the first
/// of every `keepOneIn` per topic and removes the others. Per topic, because readings of several beacons interleave:
/// thinning the merged stream 1-in-2 could remove every reading of one beacon and none of another.
struct Downsampler {
    let keepOneIn: Int
    private var seen: [String: Int] = [:]

    init(keepOneIn: Int) {
        precondition(keepOneIn >= 1, "keepOneSampleIn must be at least 1")
        self.keepOneIn = keepOneIn
    }

    /// True when the next sample of `topic` (in seq order) is to be removed.
    mutating func removes(topic: String) -> Bool {
        let n = seen[topic, default: 0]
        seen[topic] = n + 1
        return n % keepOneIn != 0
    }
}
