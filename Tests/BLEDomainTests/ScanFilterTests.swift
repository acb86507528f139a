import BLEHCI
import BLETransport
import Testing

@testable import BLEDomain

@Suite struct ScanFilterTests {
    func sighting(_ data: [UInt8], address: UInt64 = 0xC0FF_EE12_3456, rssi: UInt8 = 0xC4) -> Sighting {
        Vectors.sightings(fromH4: Vectors.legacyEvent(address: address, data: data, rssi: rssi))[0]
    }

    @Test func parsesEveryTermKind() throws {
        let f = try ScanFilter(parsing: [
            "uuid:FEAA", "uuid:E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "name:Kitchen", "addr:AA:BB:CC:DD:EE:FF",
            "company:0x004C", "company:89", "rssi:-80",
        ])
        #expect(f.serviceUUIDs == [BluetoothUUID(uuid16: 0xFEAA), BluetoothUUID("e2c56db5dffb48d2b060d0f5a71096e0")])
        #expect(f.namePrefixes == [Array("Kitchen".utf8)])
        #expect(f.addresses == [BDAddress(rawValue: 0xAABB_CCDD_EEFF)])
        #expect(f.companyIDs == [0x004C, 89])
        #expect(f.minimumRSSI == -80)
    }

    @Test func rejectsBadTermsWithMessagesNamingTheTerm() {
        let bad: [(String, ScanFilterError.Code)] = [
            ("FEAA", .missingKind), ("colour:red", .unknownKind), ("name:", .emptyValue), ("uuid:FEA", .badValue),
            ("uuid:E2C56DB5-DFFB-48D2-B060", .badValue), ("addr:AA:BB:CC", .badValue), ("company:0x10000", .badValue),
            ("company:4C", .badValue), ("rssi:abc", .badValue), ("rssi:-200", .badValue),
        ]
        for (term, code) in bad {
            #expect {
                _ = try ScanFilter(parsing: [term])
            } throws: { error in
                guard let e = error as? ScanFilterError else { return false }
                return e.code == code && e.description.contains("'\(term)'")
            }
        }
    }

    @Test func emptyFilterKeepsEverything() {
        #expect(ScanFilter().matches(sighting([])))
    }

    @Test func matchesServiceUUIDsInListsServiceDataAndIBeaconUUIDs() throws {
        let feaa = try ScanFilter(parsing: ["uuid:FEAA"])
        #expect(feaa.matches(sighting(Vectors.eddystoneUID)))
        #expect(feaa.matches(sighting(Vectors.hex("05 16 AA FE 40 00"))))  // service data only
        #expect(!feaa.matches(sighting(Vectors.heartRate)))
        let air = try ScanFilter(parsing: ["uuid:E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"])
        #expect(air.matches(sighting(Vectors.iBeacon)))
        let nus = try ScanFilter(parsing: ["uuid:6e400001-b5a3-f393-e0a9-e50e24dcca9e"])
        #expect(nus.matches(sighting(Vectors.nordicUART)))
    }

    @Test func termsOfOneKindAreOredAndKindsAreAnded() throws {
        let f = try ScanFilter(parsing: ["uuid:FEAA", "uuid:180D", "rssi:-70"])
        #expect(f.matches(sighting(Vectors.eddystoneUID, rssi: 0xC4)))  // -60
        #expect(f.matches(sighting(Vectors.heartRate, rssi: 0xBA)))  // -70
        #expect(!f.matches(sighting(Vectors.heartRate, rssi: 0xB9)))  // -71
        #expect(!f.matches(sighting(Vectors.iBeacon, rssi: 0xC4)))
        #expect(!f.matches(sighting(Vectors.heartRate, rssi: 127)))  // RSSI unavailable never passes
    }

    @Test func matchesNamePrefixAddressAndCompany() throws {
        #expect(try ScanFilter(parsing: ["name:Polar"]).matches(sighting(Vectors.heartRate)))
        #expect(try !ScanFilter(parsing: ["name:polar"]).matches(sighting(Vectors.heartRate)))
        #expect(try !ScanFilter(parsing: ["name:Polar"]).matches(sighting(Vectors.iBeacon)))
        #expect(try ScanFilter(parsing: ["addr:c0ffee123456"]).matches(sighting([])))
        #expect(try !ScanFilter(parsing: ["addr:C0:FF:EE:12:34:57"]).matches(sighting([])))
        #expect(try ScanFilter(parsing: ["company:0x004C"]).matches(sighting(Vectors.iBeacon)))
        #expect(try ScanFilter(parsing: ["company:0x0118"]).matches(sighting(Vectors.altBeacon)))
        // A second manufacturer structure counts too.
        let two = Vectors.hex("03 FF 5900") + Vectors.iBeacon.dropFirst(3)  // 31 octets: the legacy maximum
        #expect(try ScanFilter(parsing: ["company:0x004C"]).matches(sighting(two)))
    }
}
