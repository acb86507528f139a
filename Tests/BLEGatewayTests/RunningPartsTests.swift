import Foundation
import Testing

@testable import BLEGateway

/// The runtime's shutdown order: the parts stop in the reverse of the order they started, each one ended before the
/// next is told to stop.
@Suite struct RunningPartsTests {
    /// The names of the parts that ended, in the order they ended.
    final class Ended: @unchecked Sendable {
        private let lock = NSLock()
        private var names: [String] = []
        func append(_ name: String) { lock.withLock { names.append(name) } }
        var order: [String] { lock.withLock { names } }
    }

    /// A part that runs until cancelled, then records that it ended.
    static func part(_ name: String, _ ended: Ended) -> Task<Void, Never> {
        Task {
            let (stream, _) = AsyncStream.makeStream(of: Void.self)
            for await _ in stream {}  // ends only when the task is cancelled
            ended.append(name)
        }
    }

    @Test func partsStopNewestFirstAndAPartialStopLeavesTheOlderOnesRunning() async {
        let ended = Ended()
        var parts = RunningParts()
        for name in ["followers", "mqtt", "publisher", "ticker", "scan"] { parts.started(name, Self.part(name, ended)) }
        parts.started("absent", nil)  // a part this configuration does not have

        await parts.stop(through: "ticker")
        #expect(ended.order == ["scan", "ticker"])

        await parts.stopAll()
        #expect(ended.order == ["scan", "ticker", "publisher", "mqtt", "followers"])
    }

    @Test func aNameHoldsSeveralTasksAndStopsThemAll() async {
        let ended = Ended()
        var parts = RunningParts()
        parts.started("remote configuration", Self.part("fleet layer", ended))
        parts.started("remote configuration", Self.part("gateway layer", ended))
        parts.started("scan", Self.part("scan", ended))
        await parts.stop(through: "remote configuration")
        #expect(ended.order == ["scan", "gateway layer", "fleet layer"])
    }
}
