/// Counts losses in one gateway's `seq` the way docs/TOPICS.md defines them: a hole between two readings of the
/// same run, both received live. Retained messages are older readings re-sent by the broker at subscribe time,
/// so their seqs are not a stream (a retained `status` with seq 1 beside a live `health` with seq 1963 is no loss);
/// duplicates (QoS 1 redelivery) repeat a seq and are dropped; a new `run` starts a new stream.
public struct SeqStream: Sendable, Equatable, Encodable {
    /// The run whose live stream is being followed.
    public private(set) var run: String?
    /// Highest live seq seen in `run`.
    public private(set) var lastSeq: Int?
    /// Holes (each a run of missing seqs) seen live.
    public private(set) var gaps = 0
    /// Seqs missing inside those holes.
    public private(set) var missing = 0
    /// Live readings that repeated or went back on a seq already seen (redeliveries).
    public private(set) var duplicates = 0

    public init() {}

    /// What folding one reading did to the stream.
    public enum Outcome: Sendable, Equatable {
        case next, first
        case gap(missing: Int)
        case duplicate, notInStream
    }

    /// Folds one reading's envelope. `seq` is nil for the last will (outside the durable sequence).
    @discardableResult
    public mutating func receive(run: String?, seq: Int?, retained: Bool) -> Outcome {
        guard !retained, let run, let seq else { return .notInStream }
        guard run == self.run, let last = lastSeq else {
            self.run = run
            lastSeq = seq
            return .first
        }
        if seq <= last {
            duplicates += 1
            return .duplicate
        }
        lastSeq = seq
        if seq == last + 1 { return .next }
        gaps += 1
        missing += seq - last - 1
        return .gap(missing: seq - last - 1)
    }
}
