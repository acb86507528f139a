import BLETransport
import Foundation
import Testing

@testable import BLESpool

@Suite("several producers, the commit service and the publisher at once")
struct SpoolConcurrencyTests {
    @Test func concurrentProducersKeepTheirOwnOrderAndEverySeqIsUsedOnce() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let spool = try Spool(configuration: SpoolConfiguration(path: dir.spoolPath, commitWindow: .milliseconds(5)))
        let service = Task { await spool.run(clock: SystemClock()) }
        let perProducer = 5_000
        let stateSeqs = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for producer in 0..<3 {
                group.addTask {
                    for n in 0..<perProducer { spool.append(sample(n, topic: "gw/p\(producer)")) }
                    return []
                }
            }
            group.addTask {
                var seqs: [UInt64] = []
                for n in 0..<50 { seqs.append(try spool.appendDurably(state("s\(n)"))) }
                return seqs
            }
            // The publisher reads and acknowledges while readings flow; acknowledged rows must never come back.
            group.addTask {
                var acked: [UInt64] = []
                var cursor: UInt64 = 0
                for _ in 0..<200 {
                    let batch = try spool.pending(after: cursor, limit: 100)
                    if let last = batch.last { cursor = last.seq }
                    let firstHalf = batch.prefix(batch.count / 2).map(\.seq)
                    spool.acknowledge(firstHalf)
                    acked += firstHalf
                    await Task.yield()
                }
                return acked.map { $0 | 1 << 63 }  // tagged: acknowledged, not a state
            }
            var all: [UInt64] = []
            for try await part in group { all += part }
            return all
        }
        service.cancel()
        await service.value
        let acked = Set(stateSeqs.filter { $0 & 1 << 63 != 0 }.map { $0 & ~(1 << 63) })
        let states = stateSeqs.filter { $0 & 1 << 63 == 0 }

        let rows = try spool.everything()
        let lastSeq = spool.statistics.lastSeq
        #expect(lastSeq == UInt64(3 * perProducer + 50), "one seq per reading, none skipped or reused")
        #expect(Set(rows.map(\.seq)).isDisjoint(with: acked))
        #expect(rows.count + acked.count == Int(lastSeq))
        #expect(states == states.sorted(), "a producer's states are committed in its order")
        let stateRows = rows.filter { $0.reading.readingClass == .state }
        #expect(stateRows.map(\.seq).allSatisfy { states.contains($0) })
        for producer in 0..<3 {
            let mine = rows.filter { $0.reading.topic == "gw/p\(producer)" }.compactMap { Int($0.text.dropFirst(5)) }
            #expect(mine == mine.sorted(), "producer \(producer)'s order is kept")
        }
    }
}
