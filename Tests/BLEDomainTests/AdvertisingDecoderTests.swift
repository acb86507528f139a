import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct AdvertisingDecoderTests {
    @Test func decodesFlagsServiceListAppearanceTxPowerAndCompleteName() {
        let ad = Advertisement(decoding: Vectors.heartRate[...])
        #expect(ad.flags == 0x06)
        #expect(ad.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D), BluetoothUUID(uuid16: 0x180F)])
        #expect(ad.appearance == 0x0341)
        #expect(ad.txPowerLevel == 4)
        #expect(ad.name == "Polar H7")
        #expect(ad.nameIsComplete)
        #expect(ad.beacon == nil)
        #expect(ad.issues.isEmpty)
        #expect(ad.structureCount == 5)
    }

    @Test func reads128BitServiceUUIDsLeastSignificantOctetFirst() {
        let ad = Advertisement(decoding: Vectors.nordicUART[...])
        #expect(ad.serviceUUIDs == [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])
        #expect(ad.name == "NURT")
        #expect(!ad.nameIsComplete)
        #expect(ad.serviceUUIDs.first?.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    }

    @Test func reads32BitServiceUUIDsAndServiceData32And128() {
        let data = Vectors.hex("05 05 78563412  07 20 78563412 AABB  13 21 9ECADC240EE5A9E093F3A3B50100406E 01 02")
        let ad = Advertisement(decoding: data[...])
        #expect(ad.serviceUUIDs == [BluetoothUUID(uuid32: 0x1234_5678)])
        #expect(ad.serviceUUIDs.first?.description == "12345678")
        let sd = ad.serviceData
        #expect(sd.count == 2)
        #expect(sd.first?.uuid == BluetoothUUID(uuid32: 0x1234_5678))
        #expect(sd.first.map { Array($0.data) } == [0xAA, 0xBB])
        #expect(sd.last?.uuid == BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        #expect(sd.last.map { Array($0.data) } == [0x01, 0x02])
        #expect(ad.issues.isEmpty)
    }

    @Test func prefersTheCompleteNameOverTheShortenedOneInEitherOrder() {
        let a = Advertisement(decoding: Vectors.hex("04 09 4B6974 03 08 4B69")[...])
        let b = Advertisement(decoding: Vectors.hex("03 08 4B69 04 09 4B6974")[...])
        #expect(a.name == "Kit")
        #expect(b.name == "Kit")
    }

    @Test func keepsManufacturerDataWithLittleEndianCompanyID() {
        let ad = Advertisement(decoding: Vectors.hex("06 FF 5900 0102 03")[...])
        #expect(ad.manufacturerData?.companyID == 0x0059)
        #expect(ad.manufacturerData.map { Array($0.data) } == [1, 2, 3])
        #expect(ad.beacon == nil)
    }

    @Test func replacesInvalidUTF8InNamesInsteadOfFailing() {
        let ad = Advertisement(decoding: Vectors.hex("05 09 41 FF C3 42")[...])
        #expect(ad.name == "A\u{FFFD}\u{FFFD}B")
    }

    // MARK: malformed input

    @Test func flagsALengthThatRunsPastTheEndAndKeepsWhatCameBefore() {
        let ad = Advertisement(decoding: Vectors.hex("02 01 06 09 09 4B 69")[...])
        #expect(ad.flags == 0x06)
        #expect(ad.name == nil)
        #expect(ad.issues == .truncated)
    }

    @Test func treatsZeroLengthAsEarlyTerminationAndFlagsNonZeroOctetsAfterIt() {
        let padded = Advertisement(decoding: Vectors.hex("02 01 06 00 00 00")[...])
        #expect(padded.flags == 0x06)
        #expect(padded.issues.isEmpty)
        let junk = Advertisement(decoding: Vectors.hex("02 01 06 00 03 09 41 42")[...])
        #expect(junk.flags == 0x06)
        #expect(junk.name == nil)
        #expect(junk.issues == .zeroLength)
    }

    @Test func flagsFieldLengthsTheFormatDoesNotAllow() {
        let cases = ["01 01", "03 0A 01 02", "04 03 0D 18 0F", "02 19 41", "02 FF 4C", "02 16 AA", "04 21 01 02 03"]
        for c in cases {
            let ad = Advertisement(decoding: Vectors.hex(c)[...])
            #expect(ad.issues == .badFieldLength, "\(c)")
            #expect(ad.txPowerLevel == nil && ad.appearance == nil && ad.manufacturerData == nil && ad.beacon == nil)
        }
        // The odd trailing octet of a 16-bit list is dropped; the whole UUIDs before it are kept.
        let odd = Advertisement(decoding: Vectors.hex("04 03 0D 18 0F")[...])
        #expect(odd.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
    }

    @Test func flagsDataLongerThanAnyAdvertisementCanCarry() {
        var data: [UInt8] = []
        while data.count <= 1650 { data += [0x1F, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xAB, count: 29) }
        let ad = Advertisement(decoding: data[...])
        #expect(ad.issues.contains(.oversized))
        #expect(ad.manufacturerData?.companyID == 0xFFFF)
    }

    @Test func decodesEmptyDataAsNothing() {
        let ad = Advertisement(decoding: [][...])
        #expect(ad.structureCount == 0 && ad.issues.isEmpty && ad.flags == nil && ad.name == nil)
    }

    @Test func worksOnASliceThatDoesNotStartAtIndexZero() {
        let framed = [0xEE, 0xEE, 0xEE] + Vectors.heartRate + [0xEE]
        let ad = Advertisement(decoding: framed[3..<(framed.count - 1)])
        #expect(ad.name == "Polar H7")
        #expect(ad.appearance == 0x0341)
    }
}
