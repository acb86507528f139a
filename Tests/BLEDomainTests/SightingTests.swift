import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEDomain

@Suite struct SightingTests {
    @Test func decodesALegacyReportEventIntoASighting() throws {
        let s = try #require(Vectors.sightings(fromH4: Vectors.legacyEvent(data: Vectors.iBeacon)).first)
        #expect(s.address == BDAddress("C0:FF:EE:12:34:56"))
        #expect(s.addressType == .random)
        #expect(s.rssi == -60)
        #expect(s.txPower == nil)
        #expect(s.timestamp == 1_700_000_000.25)
        #expect(!s.isConnectable)  // ADV_NONCONN_IND
        #expect(!s.isScanResponse)
        #expect(s.identity.id == "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2")
    }

    @Test func rssi127NeverBecomesANumber() throws {
        let s = try #require(Vectors.sightings(fromH4: Vectors.legacyEvent(data: [], rssi: 127)).first)
        #expect(s.rssi == nil)
        let e = try #require(Vectors.sightings(fromH4: Vectors.extendedEvent(rssi: 127, data: [])).first)
        #expect(e.rssi == nil)
        #expect(e.jsonLine.contains(#""rssi":null"#))
        let built = Sighting(
            address: BDAddress(rawValue: 1), addressType: .public, rssi: 127, txPower: nil, timestamp: 0,
            isConnectable: false, isScanResponse: false, advertisement: Advertisement(decoding: [][...]))
        #expect(built.rssi == nil)
    }

    @Test func takesTxPowerFromTheExtendedReportBeforeTheAdvertisedLevel() throws {
        let withBoth = Vectors.extendedEvent(txPower: 0xF8, data: Vectors.heartRate)
        #expect(try #require(Vectors.sightings(fromH4: withBoth).first).txPower == -8)
        let onlyAD = Vectors.extendedEvent(txPower: 0x7F, data: Vectors.heartRate)
        #expect(try #require(Vectors.sightings(fromH4: onlyAD).first).txPower == 4)
    }

    @Test func readsConnectableAndScanResponseFromBothReportKinds() throws {
        let advInd = try #require(Vectors.sightings(fromH4: Vectors.legacyEvent(eventType: 0x00, data: [])).first)
        #expect(advInd.isConnectable && !advInd.isScanResponse)
        let scanRsp = try #require(Vectors.sightings(fromH4: Vectors.legacyEvent(eventType: 0x04, data: [])).first)
        #expect(!scanRsp.isConnectable && scanRsp.isScanResponse)
        // Extended: bit 0 connectable, bit 3 scan response, bit 4 legacy PDU.
        let ext = try #require(Vectors.sightings(fromH4: Vectors.extendedEvent(eventType: 0x001B, data: [])).first)
        #expect(ext.isConnectable && ext.isScanResponse)
    }

    @Test func decodesTheSameSightingsWhenTheEventArrivesOneByteAtATime() {
        let stream = Vectors.legacyEvent(data: Vectors.eddystoneUID) + Vectors.extendedEvent(data: Vectors.altBeacon)
        var d = H4Deframer()
        var ids: [String] = []
        for b in stream {
            d.append([b])
            while let p = d.next() {
                ids += Vectors.sightings(fromH4: p.h4Bytes).map(\.identity.id)
            }
        }
        #expect(
            ids == [
                "eddystone-edd1ebeac04e5defa017-0bdb87539b67", "altbeacon-2f234454cf6d4a0fadf2f4911ba9ffa600010002",
            ])
    }
}
