import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct BeaconIdentityTests {
    let address = BDAddress(rawValue: 0xC0FF_EE12_3456)

    func id(_ data: [UInt8]) -> String {
        BeaconIdentity(beacon: Advertisement(decoding: data[...]).beacon, address: address).id
    }

    @Test func formatsEachSchemeExactlyAsTheSimulatorsGroundTruth() {
        #expect(id(Vectors.iBeacon) == "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2")
        #expect(id(Vectors.eddystoneUID) == "eddystone-edd1ebeac04e5defa017-0bdb87539b67")
        #expect(id(Vectors.altBeacon) == "altbeacon-2f234454cf6d4a0fadf2f4911ba9ffa600010002")
        #expect(id(Vectors.heartRate) == "mac-c0ffee123456")
    }

    @Test func usesTheAddressForEddystoneFramesWithoutAStableID() {
        for v in [Vectors.eddystoneURL, Vectors.eddystoneTLM, Vectors.eddystoneEID] {
            #expect(id(v) == "mac-c0ffee123456")
        }
    }

    @Test func printsMajorAndMinorInDecimalAndUsesOnlyTopicSafeCharacters() {
        let b = IBeacon(
            proximityUUID: BluetoothUUID(high: 0xFFFF_FFFF_FFFF_FFFF, low: 0), major: 65535, minor: 0,
            measuredPower: 0)
        let s = BeaconIdentity(beacon: .iBeacon(b), address: address).id
        #expect(s == "ibeacon-ffffffffffffffff0000000000000000-65535-0")
        #expect(s.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D })
    }

    @Test func equalIdentitiesHashEqualWithoutBuildingStrings() {
        let a = BeaconIdentity(beacon: Advertisement(decoding: Vectors.iBeacon[...]).beacon, address: address)
        let b = BeaconIdentity(
            beacon: Advertisement(decoding: Vectors.iBeacon[...]).beacon,
            address: BDAddress(rawValue: 1))
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
    }
}
