import Testing

@testable import BLEPublishing

/// Which broker each attempt dials, without a broker: the orders written out.
@Suite struct BrokerRotationTests {
    static let nodes = (1...3).map { MQTTConfiguration.Broker(host: "n\($0)", port: 1883) }

    /// A generator that repeats one value: `Int.random(in:using:)` then draws the same index every time.
    struct Fixed: RandomNumberGenerator {
        var value: UInt64
        mutating func next() -> UInt64 { value }
    }

    @Test func inOrderEachAttemptAfterAnEndDialsTheNextBrokerRoundAndRound() {
        var random = SystemRandomNumberGenerator()
        var r = BrokerRotation(Self.nodes, failover: .inOrder, using: &random)
        var dialled: [String] = []
        for _ in 0..<5 {
            dialled.append(r.dial().host)
            r.ended(using: &random)
        }
        #expect(dialled == ["n1", "n2", "n3", "n1", "n2"])
        #expect(r.failovers == 0, "no attempt was accepted")
    }

    @Test func aConnectionAcceptedByAnotherBrokerIsAFailoverAndOneByTheSameIsNot() {
        var random = SystemRandomNumberGenerator()
        var r = BrokerRotation([Self.nodes[0]], failover: .inOrder, using: &random)
        for _ in 0..<3 {
            #expect(r.dial() == Self.nodes[0])
            r.accepted()
            r.ended(using: &random)
        }
        #expect(r.failovers == 0, "one broker: reconnections, never a failover")

        var cluster = BrokerRotation(Self.nodes, failover: .inOrder, using: &random)
        _ = cluster.dial()
        cluster.accepted()
        #expect(cluster.current == Self.nodes[0])
        cluster.ended(using: &random)
        #expect(cluster.current == nil, "between connections the client is on no broker")
        _ = cluster.dial()  // n2 refuses
        cluster.ended(using: &random)
        #expect(cluster.dial() == Self.nodes[2])
        cluster.accepted()
        #expect(cluster.current == Self.nodes[2])
        #expect(cluster.failovers == 1, "n1, then n3: one failover (the refused attempt is none)")
    }

    @Test func atRandomTheFirstBrokerIsDrawnAndTheNextIsNeverTheOneJustLeft() {
        var last = Fixed(value: .max)
        let drawn = BrokerRotation(Self.nodes, failover: .random, using: &last)
        #expect(drawn.phase == .between(next: 2), "the first attempt draws among all three")

        var random = SystemRandomNumberGenerator()
        var r = BrokerRotation(Self.nodes, failover: .random, using: &random)
        var previous = r.dial()
        var seen: Set<MQTTConfiguration.Broker> = [previous]
        for _ in 0..<200 {
            r.ended(using: &random)
            let next = r.dial()
            #expect(next != previous, "an ended attempt's broker is not dialled again at once")
            seen.insert(next)
            previous = next
        }
        #expect(seen.count == 3, "every broker is reached")
    }

    @Test func anAttemptThatCouldNotStartIsMadeAgainOnTheSameBroker() {
        var random = SystemRandomNumberGenerator()
        var r = BrokerRotation(Self.nodes, failover: .inOrder, using: &random)
        #expect(r.dial() == Self.nodes[0])
        #expect(r.dial() == Self.nodes[0], "dial without an end: the same broker")
    }
}
