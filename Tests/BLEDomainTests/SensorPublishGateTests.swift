import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct SensorPublishGateTests {
    let address = BDAddress("A4:C1:38:0A:0B:0C")!

    func reading(counter: UInt32?, temperature: Double, encryption: UInt32? = nil) -> SensorReading {
        var r = SensorReading(format: .bthome, model: "BTHome")
        r.counter = counter
        r.encryptionCounter = encryption
        r.append(.temperature, temperature)
        return r
    }

    func gate(minimum: Duration = .zero, window: Duration = .seconds(10)) -> SensorPublishGate {
        var c = SensorPublishGate.Configuration()
        c.minimumInterval = minimum
        c.repeatWindow = window
        return SensorPublishGate(configuration: c)
    }

    @Test func theSamePacketCounterWithinTheWindowIsARepeatAndCounted() {
        var g = gate()
        #expect(g.admit(reading(counter: 7, temperature: 21), from: address, at: .seconds(0)) == .publish)
        #expect(g.admit(reading(counter: 7, temperature: 21), from: address, at: .milliseconds(100)) == .repeatPacket)
        #expect(g.admit(reading(counter: 8, temperature: 21), from: address, at: .milliseconds(200)) == .publish)
        #expect(g.statistics.repeats == 1)
        #expect(g.statistics.published == 2)
    }

    @Test func withoutACounterTheSameValuesAreARepeatOnlyWithinTheWindow() {
        var g = gate(window: .seconds(5))
        #expect(g.admit(reading(counter: nil, temperature: 21), from: address, at: .seconds(0)) == .publish)
        #expect(g.admit(reading(counter: nil, temperature: 21), from: address, at: .seconds(1)) == .repeatPacket)
        #expect(g.admit(reading(counter: nil, temperature: 21.5), from: address, at: .seconds(2)) == .publish)
        // Heard again only after the window: a sensor resending an unchanged value is a new reading.
        #expect(g.admit(reading(counter: nil, temperature: 21.5), from: address, at: .seconds(8)) == .publish)
    }

    @Test func aMinimumIntervalBoundsTheRatePerSensor() {
        var g = gate(minimum: .seconds(10))
        #expect(g.admit(reading(counter: 1, temperature: 21), from: address, at: .seconds(0)) == .publish)
        #expect(g.admit(reading(counter: 2, temperature: 22), from: address, at: .seconds(3)) == .rateLimited)
        #expect(g.admit(reading(counter: 3, temperature: 23), from: address, at: .seconds(10)) == .publish)
        let other = BDAddress("A4:C1:38:0A:0B:0D")!
        #expect(g.admit(reading(counter: 1, temperature: 21), from: other, at: .seconds(11)) == .publish)
        #expect(g.statistics.rateLimited == 1)
    }

    @Test func aButtonPressIsNeverRateLimitedButItsRepeatsAreStillDropped() {
        var g = gate(minimum: .seconds(10))
        var press = SensorReading(format: .bthome, model: "BTHome")
        press.counter = 1
        press.append(.buttonEvent, 1)
        var second = press
        second.counter = 2
        #expect(g.admit(press, from: address, at: .seconds(0)) == .publish)
        #expect(g.admit(press, from: address, at: .milliseconds(50)) == .repeatPacket)
        #expect(g.admit(second, from: address, at: .milliseconds(400)) == .publish)
    }

    @Test func anEncryptionCounterGoingBackwardsIsAReplayUnlessTheDeviceRestarted() {
        var g = gate()
        #expect(
            g.admit(reading(counter: nil, temperature: 21, encryption: 500), from: address, at: .seconds(0)) == .publish
        )
        #expect(
            g.admit(reading(counter: nil, temperature: 25, encryption: 400), from: address, at: .seconds(1)) == .replay)
        #expect(
            g.admit(reading(counter: nil, temperature: 22, encryption: 501), from: address, at: .seconds(2)) == .publish
        )
        // Below 100: the counter restarted (battery change), as bthome-ble also accepts.
        #expect(
            g.admit(reading(counter: nil, temperature: 23, encryption: 3), from: address, at: .seconds(3)) == .publish)
        #expect(g.statistics.replays == 1)
    }

    @Test func anUndecryptableFrameNeitherMovesTheReplayGuardNorGoesUncounted() {
        var g = gate()
        #expect(
            g.admit(reading(counter: nil, temperature: 21, encryption: 500), from: address, at: .seconds(0)) == .publish
        )
        var forged = SensorReading(format: .bthome, model: "BTHome")
        forged.encryptionCounter = 0xFFFF_FFFF
        forged.issues.insert(.authenticationFailed)
        _ = g.admit(forged, from: address, at: .seconds(1))
        #expect(
            g.admit(reading(counter: nil, temperature: 22, encryption: 501), from: address, at: .seconds(2)) == .publish
        )
        #expect(g.statistics.undecryptable == 1)
    }

    @Test func theTableIsBoundedForgettingTheLeastRecentlyHeard() {
        var c = SensorPublishGate.Configuration()
        c.capacity = 2
        var g = SensorPublishGate(configuration: c)
        for k in 0..<3 {
            _ = g.admit(
                reading(counter: 1, temperature: 21), from: BDAddress(rawValue: UInt64(k)), at: .seconds(Int64(k)))
        }
        #expect(g.trackedCount == 2)
        #expect(g.statistics.forgotten == 1)
    }
}
