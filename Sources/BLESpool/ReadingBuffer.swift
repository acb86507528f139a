/// Readings appended but not yet committed, oldest first, bounded: beyond `maxSamples` the oldest buffered sample
/// is removed (and counted); state events are refused beyond `maxStates` rather than removed.
struct ReadingBuffer {
    private var storage: [Reading?] = []
    private var head = 0
    /// No sample lives below this index (a hint that keeps "remove the oldest sample" O(1) amortised).
    private var sampleScan = 0
    private(set) var samples = 0
    private(set) var states = 0

    var count: Int { samples + states }
    var isEmpty: Bool { count == 0 }

    /// Appends; returns how many samples the bound removed (0 or 1).
    mutating func append(_ reading: Reading, maxSamples: Int) -> Int {
        storage.append(reading)
        if reading.readingClass == .state { states += 1 } else { samples += 1 }
        return trim(maxSamples: maxSamples)
    }

    /// Takes everything, oldest first.
    mutating func takeAll() -> [Reading] {
        let all = storage[head...].compactMap { $0 }
        storage.removeAll(keepingCapacity: true)
        head = 0
        sampleScan = 0
        samples = 0
        states = 0
        return all
    }

    /// Puts a batch whose commit failed back in front of what was appended since; returns samples removed.
    mutating func restore(_ batch: [Reading], maxSamples: Int) -> Int {
        let newer = takeAll()
        for reading in batch + newer {
            storage.append(reading)
            if reading.readingClass == .state { states += 1 } else { samples += 1 }
        }
        return trim(maxSamples: maxSamples)
    }

    /// Slots in `storage`, live or emptied: bounded by `count` plus the compaction slack.
    var slots: Int { storage.count }

    private mutating func trim(maxSamples: Int) -> Int {
        defer { compactIfSparse() }
        var removed = 0
        while samples > maxSamples {
            var i = max(head, sampleScan)
            // samples > 0, so a sample exists at or after i.
            while i < storage.count {
                if let reading = storage[i], reading.readingClass != .state { break }
                i += 1
            }
            storage[i] = nil
            samples -= 1
            removed += 1
            sampleScan = i + 1
            while head < storage.count, storage[head] == nil { head += 1 }
        }
        return removed
    }

    /// While commits fail and samples keep coming, every append at the bound empties one slot; without compaction the
    /// array would grow forever (a state at the front stops `head` from moving). Compacting when more than half the
    /// slots are empty keeps memory bounded at O(count) for O(1) amortised work per append.
    private mutating func compactIfSparse() {
        let empty = storage.count - count
        guard empty > 1024, empty > count else { return }
        storage = storage[head...].filter { $0 != nil }
        head = 0
        sampleScan = 0
    }
}
