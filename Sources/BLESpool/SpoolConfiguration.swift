/// How the spool stores readings. Every field has a default suited to a Raspberry Pi on an SD card.
public struct SpoolConfiguration: Sendable, Hashable {
    /// How strongly a commit is made durable.
    public struct Durability: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `PRAGMA synchronous=FULL`: the WAL is fsynced at every commit, so a committed reading survives power loss.
        public static let full = Durability(rawValue: "FULL")
        /// `PRAGMA synchronous=NORMAL`: survives a process crash; a power cut may lose the last commits.
        public static let normal = Durability(rawValue: "NORMAL")
        /// `PRAGMA synchronous=OFF`: no fsync at commit, so a power cut loses what the page cache held. Only the
        /// power-loss drill's broken variant asks for it (it must fail the drill); nothing a user sets leads here.
        public static let off = Durability(rawValue: "OFF")
    }

    /// The SQLite file. Its `-wal` sits beside it, and `<path>.seq` holds the sequence reservation.
    public var path: String
    /// Budget for stored readings, in bytes charged by `Reading.storedSize`. Above it samples are downsampled, then
    /// dropped oldest first. State events are never dropped, so states alone may exceed it. Default 64 MiB.
    public var maxBytes: Int
    /// When the budget is exceeded, samples are removed until the spool is back under `maxBytes × trimFraction`,
    /// so that the next commits do not each trim a few rows (hysteresis). 0 < value ≤ 1. Default 0.9.
    public var trimFraction: Double
    /// How long appended readings wait in memory before `run(clock:)` commits them; at most 100 ms (the crash
    /// window for samples), larger values are clamped. Longer windows mean fewer, larger writes. Default 100 ms.
    public var commitWindow: Duration
    /// How long an urgent reading (`append(_:urgent:)`: a peripheral's value, which someone waits for) waits before
    /// `run(clock:)` commits it, gathering what else arrives meanwhile; at most `commitWindow`. Default 5 ms.
    public var urgentCommitWindow: Duration
    /// Downsampling keeps one sample in `keepOneSampleIn` per topic, oldest first, before any sample is dropped.
    /// 1 disables downsampling. Default 2.
    public var keepOneSampleIn: Int
    /// The most samples held in memory when commits fail (disk full): beyond it the oldest buffered sample is
    /// dropped and counted. Default 50,000.
    public var maxBufferedSamples: Int
    /// The most state events held in memory when commits fail: beyond it `appendDurably` throws `bufferFull` and
    /// the producer keeps its event. Default 10,000.
    public var maxBufferedStates: Int
    public var durability: Durability
    /// Bounds on the dead letters (readings the broker can never take, kept for an operator): beyond either, the
    /// oldest is evicted and counted. Default 1,000 readings and 8 MiB.
    public var maxDeadLetters: Int
    public var maxDeadLetterBytes: Int
    /// Corrupt files set aside (`<path>.corrupt-*`) kept for a post-mortem, newest first; beyond this many, or
    /// beyond `maxBytes` of them, the oldest are removed (counted in the open report). Default 3.
    public var maxSetAsideFiles = 3
    /// Space held back beside the spool (`<path>.reserve`) and released when a state meets a file system that
    /// something else filled, so that the oldest samples can be removed to make room for it (a WAL needs room to
    /// grow even to delete). 0: none. Default 1 MiB.
    public var reserveBytes = 1 << 20
    /// Run `PRAGMA quick_check` at open, so a corrupt file is set aside at start rather than failing mid-run.
    /// O(size of the file). Default true.
    public var verifyOnOpen: Bool
    /// Caps the file with `PRAGMA max_page_count` (nil = no cap). For tests that need SQLITE_FULL without filling
    /// a disk, and for a hard cap on the file whatever the accounting says.
    public var maxPageCount: Int?

    public init(
        path: String, maxBytes: Int = 64 << 20, trimFraction: Double = 0.9, commitWindow: Duration = .milliseconds(100),
        urgentCommitWindow: Duration = .milliseconds(5), keepOneSampleIn: Int = 2, maxBufferedSamples: Int = 50_000,
        maxBufferedStates: Int = 10_000,
        durability: Durability = .full, verifyOnOpen: Bool = true, maxPageCount: Int? = nil,
        maxDeadLetters: Int = 1_000, maxDeadLetterBytes: Int = 8 << 20
    ) {
        self.maxDeadLetters = maxDeadLetters
        self.maxDeadLetterBytes = maxDeadLetterBytes
        self.path = path
        self.maxBytes = maxBytes
        self.trimFraction = trimFraction
        self.commitWindow = commitWindow
        self.urgentCommitWindow = urgentCommitWindow
        self.keepOneSampleIn = keepOneSampleIn
        self.maxBufferedSamples = maxBufferedSamples
        self.maxBufferedStates = maxBufferedStates
        self.durability = durability
        self.verifyOnOpen = verifyOnOpen
        self.maxPageCount = maxPageCount
    }

    /// The commit window actually used: never above 100 ms.
    var effectiveCommitWindow: Duration { min(commitWindow, .milliseconds(100)) }
    /// The urgent window actually used: never above the commit window.
    var effectiveUrgentCommitWindow: Duration { max(.zero, min(urgentCommitWindow, effectiveCommitWindow)) }
}
