import Testing

@testable import BLEFleet

@Suite struct ChangeBroadcastTests {
    @Test func aBurstOfChangesWakesAListenerOnceAndFinishEndsEveryStream() async {
        let b = ChangeBroadcast()
        let stream = b.listen()
        var it = stream.makeAsyncIterator()
        #expect(await it.next() != nil)  // the view as it is now
        for _ in 0..<10_000 { b.changed() }
        #expect(await it.next() != nil)  // one wake-up for the whole burst…
        b.finish()
        #expect(await it.next() == nil)  // …and nothing else pending: the stream just ends
        #expect(b.listenerCount == 0)
        var late = b.listen().makeAsyncIterator()
        #expect(await late.next() != nil)  // a page opened during shutdown gets the view once, then the end
        #expect(await late.next() == nil)
    }
}
