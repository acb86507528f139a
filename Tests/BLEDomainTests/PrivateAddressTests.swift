import BLEHCI
import BLETransport
import Crypto
import Testing

@testable import BLEDomain

@Suite struct PrivateAddressTests {
    static let irk = IdentityResolvingKey(
        hex: "ec0234a357c8ad05341010a60a397d9b", identity: BDAddress("00:1B:DC:00:00:42")!)!

    /// Core v5.4, Vol 3, Part H, Appendix D.7 "ah": IRK ec0234a3…7d9b, prand 708194 → hash 0dfbaa.
    @Test func ahMatchesTheCoreSpecificationVector() {
        #expect(PrivateAddressHash.ah(key: SymmetricKey(data: Self.irk.octets), prand: 0x70_8194) == 0x0D_FBAA)
    }

    @Test func theSpecificationsAddressResolvesToItsIdentityAndOthersDoNot() {
        var r = PrivateAddressResolver(keys: [Self.irk])
        // prand in the top 24 bits, hash in the bottom 24: 70:81:94:0D:FB:AA.
        let rpa = BDAddress("70:81:94:0D:FB:AA")!
        #expect(r.resolve(rpa, type: .random) == Self.irk.identity)
        #expect(r.resolve(BDAddress("70:81:94:0D:FB:AB")!, type: .random) == nil, "wrong hash")
        #expect(r.resolve(rpa, type: .public) == nil, "a public address is never resolved")
        #expect(r.resolve(BDAddress("C0:81:94:0D:FB:AA")!, type: .random) == nil, "static random (0b11) is not an RPA")
        let other = IdentityResolvingKey(
            hex: "00112233445566778899aabbccddeeff", identity: BDAddress("00:00:00:00:00:01")!)!
        var wrongKey = PrivateAddressResolver(keys: [other])
        #expect(wrongKey.resolve(rpa, type: .random) == nil)
    }

    @Test func eachAddressCostsOneAESAndTheAnswerIsCached() {
        var r = PrivateAddressResolver(keys: [Self.irk])
        let key = SymmetricKey(data: Self.irk.octets)
        let a = PrivateAddressHash.address(key: key, prand: 0x12_3456)
        #expect(PrivateAddressHash.isResolvable(a))
        for _ in 0..<10 { #expect(r.resolve(a, type: .random) == Self.irk.identity) }
        #expect(r.hashComputations == 1)
        let b = PrivateAddressHash.address(key: key, prand: 0x2A_BCDE)
        #expect(r.resolve(b, type: .random) == Self.irk.identity)
        #expect(r.hashComputations == 2, "a rotation costs one AES")
    }

    /// An identity enrolled while running: an address cached as unresolved resolves once its key is added, and a
    /// second enrolment of the same identity replaces the key instead of adding one.
    @Test func aKeyAddedWhileRunningResolvesAddressesSeenBeforeAndReplacesItsOlderKey() {
        var r = PrivateAddressResolver(keys: [])
        let rpa = BDAddress("70:81:94:0D:FB:AA")!
        #expect(r.resolve(rpa, type: .random) == nil)
        let stale = IdentityResolvingKey(hex: "00112233445566778899aabbccddeeff", identity: Self.irk.identity)!
        r.add(stale)
        #expect(r.resolve(rpa, type: .random) == nil)
        r.add(Self.irk)
        #expect(r.resolve(rpa, type: .random) == Self.irk.identity)
        #expect(r.keys == [Self.irk])
    }

    @Test func aFloodOfUnresolvableAddressesKeepsTheCacheBounded() {
        var r = PrivateAddressResolver(keys: [Self.irk], cacheCapacity: 100)
        var g = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let a = BDAddress(rawValue: 0x4000_0000_0000 | UInt64.random(in: 0..<(1 << 46), using: &g))
            _ = r.resolve(a, type: .random)
        }
        #expect(r.cache.count <= 100)
        #expect(r.cacheResets >= 99)
    }

    /// A phone rotating its address every few seconds stays one beacon: ranging keeps one track with
    /// no unknown update between, and its region never exits.
    @Test func trackingContinuesAcrossARotationWithoutAGapOrAFalseExit() {
        var resolver = PrivateAddressResolver(keys: [Self.irk])
        var ranging = RangingEngine()
        var regions = RegionMonitor(regions: [Region(id: "desk", matcher: .address(Self.irk.identity))], at: .zero)
        let key = SymmetricKey(data: Self.irk.octets)
        var events: [RegionEvent] = []
        var updates: [RangingUpdate] = []
        for step in 0..<600 {  // 60 s at 10 Hz, a new address every 15 s
            let now = Duration.milliseconds(step * 100)
            let address = PrivateAddressHash.address(key: key, prand: UInt32(0x1000 + step / 150))
            let s = Sighting(
                address: address, addressType: .random, rssi: -65, txPower: nil, timestamp: 0, isConnectable: true,
                isScanResponse: false, advertisement: Advertisement(decoding: [0x02, 0x01, 0x06][...]))
            let id = resolver.identity(of: s)
            #expect(id == .address(Self.irk.identity))
            let rssi = ranging.observe(s, as: id, at: now)
            events += regions.observe(id, rssi: rssi, at: now)
            events += regions.tick(at: now)
            updates += ranging.tick(at: now)
        }
        #expect(resolver.hashComputations == 4, "four addresses, one AES each")
        #expect(ranging.trackedCount == 1)
        #expect(
            updates.count >= 58
                && updates.allSatisfy { $0.proximity != .unknown && $0.identity == .address(Self.irk.identity) })
        #expect(events.map(\.kind) == [.determined(.inside)], "no exit across rotations")
    }
}
