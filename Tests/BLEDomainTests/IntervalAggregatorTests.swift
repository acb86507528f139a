import Testing
@testable import BLEDomain

@Suite struct IntervalAggregatorTests {
    @Test func summarisesEachKeyOncePerIntervalWithTheMeanOfItsSamples() {
        var a = IntervalAggregator<String, String>()
        for r: Int8 in [-60, -62, -64] { a.add("b1", rssi: r, at: .seconds(0.5), info: "first") }
        a.add("b2", rssi: -80, at: .seconds(0.6), info: "second")
        let s = a.flush(at: .seconds(1)).sorted { $0.key < $1.key }
        #expect(s.map(\.key) == ["b1", "b2"])
        #expect(s[0].samples == 3 && s[0].meanRSSI == -62 && s[0].lastRSSI == -64)
        #expect(a.flush(at: .seconds(2)).isEmpty, "nothing heard in the second interval")
    }

    @Test func rssiNotAvailableIsCountedAsASampleButNeverAveraged() {
        var a = IntervalAggregator<String, Int>()
        a.add("b", rssi: nil, at: .zero, info: 0)
        a.add("b", rssi: nil, at: .zero, info: 0)
        let s = a.flush(at: .seconds(1))
        #expect(s.first?.samples == 2)
        #expect(s.first?.meanRSSI == nil)
    }

    @Test func forgetsAKeyAfterItHasBeenSilentLongEnough() {
        var a = IntervalAggregator<Int, Int>(forgetAfter: .seconds(10))
        a.add(1, rssi: -50, at: .zero, info: 0)
        _ = a.flush(at: .seconds(1))
        _ = a.flush(at: .seconds(5))
        #expect(a.trackedCount == 1)
        _ = a.flush(at: .seconds(11))
        #expect(a.trackedCount == 0)
    }

    @Test func aFloodOfDistinctKeysStaysWithinCapacityAndCountsEvictions() {
        var a = IntervalAggregator<UInt64, Int>(capacity: 1000)
        for i in 0..<100_000 as Range<UInt64> {
            a.add(i, rssi: -70, at: .milliseconds(Int64(i)), info: 0)
        }
        #expect(a.trackedCount <= 1000)
        #expect(a.evictions == 100_000 - a.trackedCount)
        // The survivors are the most recently heard.
        let keys = a.flush(at: .seconds(200)).map(\.key)
        #expect(keys.min()! >= 99_000 - 100)
    }
}
