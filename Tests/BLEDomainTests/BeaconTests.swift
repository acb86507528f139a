import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct BeaconTests {
    @Test func decodesTheIBeaconPrefixUUIDMajorMinorBigEndianAndMeasuredPower() {
        let ad = Advertisement(decoding: Vectors.iBeacon[...])
        guard case .iBeacon(let b)? = ad.beacon else {
            Issue.record("not an iBeacon: \(String(describing: ad.beacon))")
            return
        }
        #expect(b.proximityUUID == BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"))
        #expect(b.major == 1)
        #expect(b.minor == 2)
        #expect(b.measuredPower == -59)
        #expect(ad.manufacturerData?.companyID == 0x004C)
        #expect(b.manufacturerData == Array(Vectors.iBeacon.suffix(23)))
    }

    @Test func rejectsAppleDataThatIsNotAnIBeacon() {
        // Apple "Nearby Info" (type 0x10) and an iBeacon cut short.
        #expect(Advertisement(decoding: Vectors.hex("07 FF 4C00 10 02 0B 00")[...]).beacon == nil)
        #expect(Advertisement(decoding: Vectors.iBeacon.prefix(29)).beacon == nil)
        #expect(Advertisement(decoding: Vectors.iBeacon.prefix(29)).issues == .truncated)
    }

    @Test func decodesEddystoneUIDNamespaceAndInstance() {
        guard case .eddystoneUID(let b)? = Advertisement(decoding: Vectors.eddystoneUID[...]).beacon else {
            Issue.record("not an Eddystone-UID")
            return
        }
        #expect(b.txPowerAt0m == -25)
        var ns: [UInt8] = []
        b.appendNamespaceHex(to: &ns)
        var inst: [UInt8] = []
        b.appendInstanceHex(to: &inst)
        #expect(String(decoding: ns, as: UTF8.self) == "edd1ebeac04e5defa017")
        #expect(String(decoding: inst, as: UTF8.self) == "0bdb87539b67")
        #expect(b.frame == Array(Vectors.eddystoneUID.suffix(20)))
    }

    @Test func acceptsEddystoneUIDWithoutTheRFUOctets() {
        let data = Vectors.hex("15 16 AA FE 00 E7 EDD1EBEAC04E5DEFA017 0BDB87539B67")
        guard case .eddystoneUID(let b)? = Advertisement(decoding: data[...]).beacon else {
            Issue.record("not an Eddystone-UID")
            return
        }
        #expect(b.instance == 0x0BDB_8753_9B67)
    }

    @Test func expandsEddystoneURLSchemeAndExpansionCodes() {
        guard case .eddystoneURL(let b)? = Advertisement(decoding: Vectors.eddystoneURL[...]).beacon else {
            Issue.record("not an Eddystone-URL")
            return
        }
        #expect(b.url == "https://www.google.com")
        #expect(b.txPowerAt0m == -21)
        let codes: [UInt8] = [0x61, 0x00, 0x62, 0x0D, 0x0A, 0x0E, 0x20, 0x7F]
        let all = EddystoneURL(txPowerAt0m: 0, scheme: 0x02, encoded: codes)!
        #expect(all.url == "http://a.com/b.gov.net%0E%20%7F")
        #expect(EddystoneURL(txPowerAt0m: 0, scheme: 0x03, encoded: [0x78, 0x06])?.url == "https://x.gov/")
    }

    @Test func rejectsEddystoneURLWithAnUnknownSchemeOrTooLong() {
        #expect(Advertisement(decoding: Vectors.hex("06 16 AA FE 10 00 04 61")[...]).beacon == nil)
        let long = [0x18, 0x16, 0xAA, 0xFE, 0x10, 0x00, 0x00] + [UInt8](repeating: 0x61, count: 18)
        #expect(Advertisement(decoding: long[...]).beacon == nil)
    }

    @Test func decodesPlainEddystoneTLMBigEndianFields() {
        guard case .eddystoneTLM(.plain(let t))? = Advertisement(decoding: Vectors.eddystoneTLM[...]).beacon else {
            Issue.record("not a plain TLM")
            return
        }
        #expect(t.batteryMillivolts == 3000)
        #expect(t.temperatureCelsius == 23.5)
        #expect(t.advertisingCount == 256)
        #expect(t.uptimeDeciseconds == 1000)
        #expect(t.frame == Array(Vectors.eddystoneTLM.suffix(14)))
        let unsupported = EddystoneTLM.Plain(
            batteryMillivolts: 0, temperatureRaw: Int16(bitPattern: 0x8000), advertisingCount: 0, uptimeDeciseconds: 0)
        #expect(unsupported.batteryVolts == nil && unsupported.temperatureCelsius == nil)
    }

    @Test func keepsEncryptedEddystoneTLMBytes() {
        guard case .eddystoneTLM(.encrypted(let e))? = Advertisement(decoding: Vectors.eddystoneETLM[...]).beacon
        else {
            Issue.record("not an encrypted TLM")
            return
        }
        #expect(Array(e) == Array(Vectors.eddystoneETLM.suffix(16)))
    }

    @Test func decodesEddystoneEID() {
        guard case .eddystoneEID(let b)? = Advertisement(decoding: Vectors.eddystoneEID[...]).beacon else {
            Issue.record("not an EID")
            return
        }
        #expect(b.eid == 0x0123_4567_89AB_CDEF)
        #expect(b.txPowerAt0m == -16)
    }

    @Test func ignoresUnknownEddystoneFrameTypesAndOtherServiceData() {
        #expect(Advertisement(decoding: Vectors.hex("05 16 AA FE 40 00")[...]).beacon == nil)
        #expect(Advertisement(decoding: Vectors.hex("05 16 0F 18 64 00")[...]).beacon == nil)
    }

    @Test func decodesAltBeaconFromAnyCompany() {
        guard case .altBeacon(let b)? = Advertisement(decoding: Vectors.altBeacon[...]).beacon else {
            Issue.record("not an AltBeacon")
            return
        }
        #expect(b.companyID == 0x0118)
        #expect(b.referenceRSSI == -59)
        #expect(b.manufacturerReserved == 0)
        #expect(HexDigits.string(b.id) == "2f234454cf6d4a0fadf2f4911ba9ffa600010002")
        #expect(b.manufacturerData == Array(Vectors.altBeacon.suffix(24)))
    }

    @Test func findsTheBeaconAfterOtherManufacturerData() {
        let data = Vectors.hex("04 FF 5900 01") + Vectors.iBeacon
        let ad = Advertisement(decoding: data[...])
        #expect(ad.manufacturerData?.companyID == 0x0059)
        if case .iBeacon? = ad.beacon {} else { Issue.record("iBeacon not found after other manufacturer data") }
    }
}
