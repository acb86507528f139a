import BLEHCI
import Foundation
import Testing

@testable import BLEDomain

@Suite struct SightingJSONTests {
    func sighting(_ data: [UInt8], rssi: UInt8 = 0xC4, eventType: UInt8 = 0x03) -> Sighting {
        Vectors.sightings(fromH4: Vectors.legacyEvent(eventType: eventType, data: data, rssi: rssi))[0]
    }

    func object(_ s: Sighting) throws -> [String: Any] {
        let line = s.jsonLine
        let any = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(any as? [String: Any], "\(line)")
    }

    @Test func encodesAnIBeaconSightingExactly() {
        #expect(
            sighting(Vectors.iBeacon).jsonLine == """
                {"ts":1700000000.25,"address":"C0:FF:EE:12:34:56","address_type":"random","rssi":-60,"tx_power":null,\
                "connectable":false,"scan_response":false,"name":null,"kind":"ibeacon",\
                "id":"ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2",\
                "ibeacon":{"uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":2,"measured_power":-59},\
                "flags":6,"appearance":null,"services":[],\
                "manufacturer":{"company_id":76,"data":"0215e2c56db5dffb48d2b060d0f5a71096e000010002c5"},\
                "service_data":[]}
                """)
    }

    @Test func encodesEddystoneFramesPerKind() throws {
        let uid = try object(sighting(Vectors.eddystoneUID))
        #expect(uid["kind"] as? String == "eddystone-uid")
        let e = try #require(uid["eddystone"] as? [String: Any])
        #expect(e["namespace"] as? String == "edd1ebeac04e5defa017")
        #expect(e["instance"] as? String == "0bdb87539b67")
        #expect(uid["services"] as? [String] == ["FEAA"])

        let url = try object(sighting(Vectors.eddystoneURL))
        #expect((url["eddystone"] as? [String: Any])?["url"] as? String == "https://www.google.com")
        #expect(url["kind"] as? String == "eddystone-url")
        #expect(url["id"] as? String == "mac-c0ffee123456")

        let tlmLine = sighting(Vectors.eddystoneTLM).jsonLine
        #expect(
            tlmLine.contains(
                #""eddystone":{"version":0,"battery_mv":3000,"temperature_c":23.5,"adv_count":256,"uptime_s":100}"#))

        let etlm = try object(sighting(Vectors.eddystoneETLM))
        #expect((etlm["eddystone"] as? [String: Any])?["etlm"] as? String == "000102030405060708090a0b")
        #expect((etlm["eddystone"] as? [String: Any])?["mic"] as? String == "1234")

        let eid = try object(sighting(Vectors.eddystoneEID))
        #expect((eid["eddystone"] as? [String: Any])?["eid"] as? String == "0123456789abcdef")
    }

    @Test func printsNegativeAndFractionalTLMTemperaturesExactly() {
        let t = EddystoneTLM.Plain(
            batteryMillivolts: 0, temperatureRaw: -0x0101, advertisingCount: 1,
            uptimeDeciseconds: 15)
        let s = sighting(Vectors.hex("03 03 AA FE 11 16 AA FE") + t.frame)
        // -0x0101 / 256 = -1.00390625
        #expect(s.jsonLine.contains(#""battery_mv":null,"temperature_c":-1.00390625,"adv_count":1,"uptime_s":1.5"#))
    }

    @Test func encodesAltBeaconAndOtherKinds() throws {
        let alt = try object(sighting(Vectors.altBeacon))
        #expect(alt["kind"] as? String == "altbeacon")
        let a = try #require(alt["altbeacon"] as? [String: Any])
        #expect(a["id"] as? String == "2f234454cf6d4a0fadf2f4911ba9ffa600010002")
        #expect(a["reference_rssi"] as? Int == -59)
        #expect(a["company_id"] as? Int == 0x0118)

        let other = try object(sighting(Vectors.heartRate, eventType: 0x00))
        #expect(other["kind"] as? String == "other")
        #expect(other["name"] as? String == "Polar H7")
        #expect(other["services"] as? [String] == ["180D", "180F"])
        #expect(other["connectable"] as? Bool == true)
        #expect(other["tx_power"] as? Int == 4)
        #expect(other["appearance"] as? Int == 0x0341)
        #expect(other["manufacturer"] is NSNull)
    }

    @Test func escapesControlCharactersQuotesAndInvalidUTF8InNamesAndEndsThemAtTheFirstNUL() throws {
        // Name: "a<LF>b\"c\\<0xFF><NUL>z" — a C string, as BlueZ and tshark read it: "z" is padding.
        let s = sighting(Vectors.hex("0A 09 61 0A 62 22 63 5C FF 00 7A"))
        let line = s.jsonLine
        #expect(line.contains(#""name":"a\nb\"c\\\#u{FFFD}""#))
        #expect(!line.utf8.contains(where: { $0 < 0x20 }))
        #expect(try object(s)["name"] as? String == "a\nb\"c\\\u{FFFD}")
    }

    @Test func writesTimestampsWithMillisecondsAndNullForNonFiniteOnes() {
        var s = sighting([])
        s.timestamp = 12.0005
        #expect(s.jsonLine.hasPrefix(#"{"ts":12.001,"#))
        s.timestamp = -1.5
        #expect(s.jsonLine.hasPrefix(#"{"ts":-1.5,"#))
        s.timestamp = .nan
        #expect(s.jsonLine.hasPrefix(#"{"ts":null,"#))
        s.timestamp = 1e300
        #expect(s.jsonLine.hasPrefix(#"{"ts":null,"#))
    }

    @Test func writesNullRSSIAndListsIssues() throws {
        let o = try object(sighting(Vectors.hex("02 01 06 09 09 4B"), rssi: 127))
        #expect(o["rssi"] is NSNull)
        #expect(o["issues"] as? [String] == ["truncated"])
    }

    @Test func writesServiceDataAs128BitWhenItIsNotABaseUUID() throws {
        let o = try object(sighting(Vectors.hex("13 21 9ECADC240EE5A9E093F3A3B50100406E 01 02")))
        let sd = try #require(o["service_data"] as? [[String: Any]])
        #expect(sd.first?["uuid"] as? String == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        #expect(sd.first?["data"] as? String == "0102")
    }
}
