import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEDomain

@Suite struct RangingTests {
    static let uuid = BluetoothUUID(high: 0xE2C5_6DB5_DFFB_48D2, low: 0xB060_D0F5_A710_96E0)
    static let beacon = BeaconIdentity.iBeacon(uuid: uuid, major: 1, minor: 2)
    static let address = BDAddress(rawValue: 0xC000_0000_0001)

    /// Readings that scatter ±4 dB about the model's mean for `distance` (deterministic).
    static func reading(_ i: Int, distance: Double, at1m: Double = -59) -> Int8 {
        let mean = at1m - 20 * log10(distance)
        let scatter: [Double] = [4, -4, 2, -2, 0, 3, -3, 1, -1, 0]
        return Int8((mean + scatter[i % scatter.count]).rounded())
    }

    @Test func aStandingBeaconIsRangedWithinTenPercentAndItsProximityBand() {
        for (d, band) in [(0.3, Proximity.immediate), (2.0, .near), (6.0, .far)] {
            var r = RangingEngine()
            var last: RangingUpdate?
            for i in 0..<300 {
                let now = Duration.milliseconds(i * 100)
                r.observe(
                    Self.beacon, address: Self.address, rssi: Self.reading(i, distance: d), frameCalibration: -59,
                    at: now)
                if let u = r.tick(at: now).last { last = u }
            }
            let u = try! #require(last)
            #expect(abs(u.distance! - d) / d < 0.1, "\(d) m → \(u.distance!)")
            #expect(u.proximity == band)
            #expect(u.samples == 10 && u.calibration == .frame && u.rssiAt1m == -59)
            #expect(u.accuracy! > 0 && u.accuracy! < d)
        }
    }

    /// A receiver that reads 2 dB low ranges 23 % long at n = 2 (10^(2/20)); its correction brings it back, and
    /// the interval's raw mean still says what the radio received.
    @Test func aReceiversOffsetCorrectsItsDistanceButNotTheRawMean() {
        func standing(offset: Double) -> RangingUpdate? {
            var c = RangingConfiguration()
            c.rssiOffsetDB = offset
            var r = RangingEngine(configuration: c)
            var last: RangingUpdate?
            for i in 0..<300 {
                let now = Duration.milliseconds(i * 100)
                let rssi = Self.reading(i, distance: 4) - 2  // 2 dB weaker than the model
                r.observe(Self.beacon, address: Self.address, rssi: rssi, frameCalibration: -59, at: now)
                if let u = r.tick(at: now).last { last = u }
            }
            return last
        }
        let uncorrected = try! #require(standing(offset: 0))
        let corrected = try! #require(standing(offset: 2))
        #expect(abs(uncorrected.distance! / 4 - 1.259) < 0.1, "uncorrected: \(uncorrected.distance!)")
        #expect(abs(corrected.distance! - 4) / 4 < 0.1, "corrected: \(corrected.distance!)")
        #expect(corrected.rawRSSIMean == uncorrected.rawRSSIMean)
    }

    @Test func rssiNotAvailableIsCountedButNeverBecomesANumber() {
        var r = RangingEngine()
        for i in 0..<5 {
            r.observe(Self.beacon, address: Self.address, rssi: nil, frameCalibration: -59, at: .milliseconds(i * 100))
        }
        _ = r.tick(at: .zero)
        let u = r.tick(at: .seconds(1))
        #expect(u.count == 1)
        #expect(u[0].samples == 5 && u[0].filteredRSSI == nil && u[0].distance == nil && u[0].proximity == .unknown)
        #expect(r.statistics.samplesWithoutRSSI == 5)
    }

    @Test func nonsenseCalibrationIsNotTrustedAndIsFlagged() {
        for bad in [0.0, 20.0] {
            var r = RangingEngine()
            _ = r.tick(at: .zero)
            r.observe(Self.beacon, address: Self.address, rssi: -59, frameCalibration: bad, at: .milliseconds(10))
            let u = r.tick(at: .seconds(1))[0]
            #expect(u.calibration == .untrustedFrame && u.rssiAt1m == -59)
            #expect(abs(u.distance! - 1) < 0.01)
            #expect(r.statistics.untrustedCalibrations == 1)
        }
    }

    @Test func calibrationOverridesPerBeaconAndPerModelWinOverTheFrame() {
        var c = RangingConfiguration()
        c.calibrationOverrides = [
            CalibrationOverride(.iBeacon(uuid: Self.uuid, major: 1, minor: 2), rssiAt1m: -70),
            CalibrationOverride(.iBeacon(uuid: Self.uuid), rssiAt1m: -65),
        ]
        var r = RangingEngine(configuration: c)
        _ = r.tick(at: .zero)
        r.observe(Self.beacon, address: Self.address, rssi: -70, frameCalibration: -59, at: .milliseconds(10))
        r.observe(
            .iBeacon(uuid: Self.uuid, major: 1, minor: 3), address: Self.address, rssi: -70, frameCalibration: -59,
            at: .milliseconds(10))
        let u = Dictionary(uniqueKeysWithValues: r.tick(at: .seconds(1)).map { ($0.identity, $0) })
        #expect(u[Self.beacon]?.rssiAt1m == -70 && u[Self.beacon]?.calibration == .configuration)
        #expect(u[.iBeacon(uuid: Self.uuid, major: 1, minor: 3)]?.rssiAt1m == -65)
    }

    @Test func theSameIdentityFromTwoAddressesIsOneBeacon() {
        var r = RangingEngine()
        _ = r.tick(at: .zero)
        r.observe(Self.beacon, address: Self.address, rssi: -60, frameCalibration: -59, at: .milliseconds(100))
        r.observe(
            Self.beacon, address: BDAddress(rawValue: 0xC000_0000_0002), rssi: -62, frameCalibration: -59,
            at: .milliseconds(200))
        let u = r.tick(at: .seconds(1))
        #expect(r.trackedCount == 1 && u.count == 1)
        #expect(u[0].samples == 2 && u[0].address == BDAddress(rawValue: 0xC000_0000_0002))
    }

    @Test func aSilentBeaconGoesUnknownOnceThenIsForgottenAndFreed() {
        var c = RangingConfiguration()
        c.unknownAfter = .seconds(3)
        c.forgetAfter = .seconds(10)
        var r = RangingEngine(configuration: c)
        _ = r.tick(at: .zero)
        r.observe(Self.beacon, address: Self.address, rssi: -60, frameCalibration: -59, at: .milliseconds(500))
        var proximities: [Proximity] = []
        for s in 1...12 { proximities += r.tick(at: .seconds(s)).map(\.proximity) }
        #expect(proximities == [.near, .near, .near, .unknown], "held for 3 s, then one unknown")
        #expect(r.trackedCount == 0 && r.statistics.forgotten == 1)
        #expect(r.index.isEmpty && r.head == -1 && r.free.count == 1)
    }

    @Test func aFloodOfRandomAddressesKeepsMemoryBoundedByEviction() {
        var c = RangingConfiguration()
        c.capacity = 1000
        var r = RangingEngine(configuration: c)
        var g = SystemRandomNumberGenerator()
        for i in 0..<100_000 {
            let a = BDAddress(rawValue: UInt64.random(in: 0..<(1 << 48), using: &g))
            r.observe(.address(a), address: a, rssi: -80, frameCalibration: nil, at: .microseconds(i * 10))
        }
        #expect(r.trackedCount == 1000 && r.index.count == 1000 && r.tracks.count == 1000)
        #expect(r.statistics.evictions == 99_000)
        #expect(r.tick(at: .seconds(2)).isEmpty, "the first tick only starts the schedule")
        #expect(r.tick(at: .seconds(3)).count == 1000)
    }

    @Test func changeOnlyModeEmitsOnProximityChangeMovementOrHeartbeat() {
        var c = RangingConfiguration()
        c.publishing = .onChange(distanceFraction: 0.2, minimumDistance: 0.3, heartbeat: .seconds(30))
        var r = RangingEngine(configuration: c)
        var emitted: [Int] = []
        for i in 0..<1200 {  // 60 s at 2 m, then 60 s at 6 m
            let now = Duration.milliseconds(i * 100)
            let d = i < 600 ? 2.0 : 6.0
            r.observe(
                Self.beacon, address: Self.address, rssi: Self.reading(i, distance: d), frameCalibration: -59, at: now)
            if !r.tick(at: now).isEmpty { emitted.append(i / 10) }
        }
        #expect(emitted.count < 20, "not 120 updates: \(emitted)")
        #expect(emitted.contains { (60...70).contains($0) }, "the move is published: \(emitted)")
        #expect(emitted.contains { (31...60).contains($0) }, "heartbeat: \(emitted)")
        #expect(r.statistics.suppressedUpdates > 100)
    }

    @Test func proximityHasHysteresisAtTheBandEdge() {
        let r = RangingEngine()
        #expect(r.proximity(3.1, previous: .near) == .near)
        #expect(r.proximity(3.4, previous: .near) == .far)
        #expect(r.proximity(2.9, previous: .far) == .far)
        #expect(r.proximity(2.6, previous: .far) == .near)
        #expect(r.proximity(2.9, previous: .unknown) == .near)
    }

    @Test func frameCalibrationsFollowEachFormat() {
        func sighting(_ data: [UInt8]) -> Sighting {
            let ad = Advertisement(decoding: data[...])
            return Sighting(
                address: Self.address, addressType: .random, rssi: -60, txPower: ad.txPowerLevel, timestamp: 0,
                isConnectable: false, isScanResponse: false, advertisement: ad)
        }
        let ib = IBeacon(proximityUUID: Self.uuid, major: 1, minor: 2, measuredPower: -61).manufacturerData
        #expect(RangingEngine.frameCalibration(of: sighting([UInt8(ib.count + 3), 0xFF, 0x4C, 0x00] + ib)) == -61)
        let uid = EddystoneUID(txPowerAt0m: -20, namespaceHigh: 1, namespaceLow: 2, instance: 3).frame
        #expect(
            RangingEngine.frameCalibration(
                of: sighting([0x03, 0x03, 0xAA, 0xFE, UInt8(uid.count + 3), 0x16, 0xAA, 0xFE] + uid)) == -61)
        #expect(
            RangingEngine.frameCalibration(of: sighting([0x02, 0x0A, 0xF8])) == -49, "TX Power Level −8 dBm − 41 dB")
        #expect(RangingEngine.frameCalibration(of: sighting([0x02, 0x01, 0x06])) == nil)
    }
}
