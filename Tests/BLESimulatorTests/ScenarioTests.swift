import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLESimulator

/// Scenario files, their error messages, advertising frames and the beacon-id scheme.
@Suite struct ScenarioTests {
    static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../config/scenarios").standardized.path

    @Test func theOfficeHasThreeGatewaysTwentyBeaconsFourSensorsAndWalkers() throws {
        let s = try ScenarioLoader.load(path: Self.scenarios + "/office.yaml")
        #expect(s.gateways.map(\.id) == ["gw-lobby", "gw-lab", "gw-kitchen"])
        let beacons = s.emitters.filter { $0.role == .beacon }
        #expect(beacons.filter { !$0.frame.isSensor }.count == 20)
        // And four broadcasting sensors, one per format the simulator spoke when the office's presence targets were
        // set. MiBeacon came later and is not in the office: one more emitter shifts every later emitter's random draws,
        // a new realisation of the same world, in which presence missed its target of no static flap (0.51 an hour).
        #expect(beacons.filter(\.frame.isSensor).count == 4)
        #expect(s.emitters.filter { $0.role == .peripheral }.count == 5)
        #expect(s.emitters.filter { $0.role == .tag }.count == 4)
        #expect(Set(s.gateways.map(\.address)).count == 3)
        #expect(s.gatewayConfigYAML?.contains("regions:") == true)
        // Walkers move: alice is somewhere else a minute later.
        let alice = try #require(s.emitters.first { $0.name == "alice" })
        #expect(alice.motion.position(at: 0) != alice.motion.position(at: 60))
    }

    @Test func theDenseHallHasFiveThousandDistinctBeacons() throws {
        let s = try ScenarioLoader.load(path: Self.scenarios + "/dense-hall.yaml")
        #expect(s.emitters.count == 5000)
        #expect(Set(s.emitters.map(\.beaconID)).count == 5000)
        #expect(Set(s.emitters.map(\.address)).count == 5000)
    }

    /// fault-drill.yaml drills the adapter lifecycle, connection-faults.yaml the link layer,
    /// bad-adapters.yaml the controllers that cannot be used; between them every kind of fault is scheduled.
    @Test func theFaultScenariosScheduleEveryKindOfFault() throws {
        let s = try ScenarioLoader.load(path: Self.scenarios + "/fault-drill.yaml")
        let link = try ScenarioLoader.load(path: Self.scenarios + "/connection-faults.yaml")
        let bad = try ScenarioLoader.load(path: Self.scenarios + "/bad-adapters.yaml")
        #expect(Set(bad.faults.map(\.kind)) == [.leUnsupported, .commandErrors])
        #expect(bad.faults.filter { $0.kind == .commandErrors }.map(\.status) == [0x03, 0x0C])
        #expect(Set(s.faults.map(\.kind)) == [.powerOff, .hardwareError, .unplug, .silence])
        #expect(Set(link.faults.map(\.kind)) == [.connectionFailure, .bufferExhaustion, .gattSilence, .peripheralOff])
        #expect(link.faults.first { $0.kind == .gattSilence }?.peripheral == "sensor-link")
        #expect(Set((s.faults + link.faults + bad.faults).map(\.kind)) == Set(FaultSpec.Kind.allCases))
        #expect(s.faults.first { $0.kind == .hardwareError }?.hardwareCode == 0x01)
    }

    @Test func anUnknownKeyIsReportedWithItsLineAndColumn() {
        let yaml =
            "name: x\ngateways:\n  - {id: gw-a, position: [0, 0]}\nbeacons:\n  - {name: b, colour: red, position: [1, 1]}\n"
        #expect {
            try ScenarioLoader.parse(yaml, file: "bad.yaml")
        } throws: { e in
            let e = e as! ScenarioError
            return e.line == 5 && e.column == 15 && e.description.hasPrefix("bad.yaml:5:15: unknown key 'colour'")
        }
    }

    @Test func brokenYAMLIsReportedWithItsLineAndColumn() {
        let yaml = "name: x\ngateways:\n  - {id: gw-a, position: [0, 0]\n"
        #expect {
            try ScenarioLoader.parse(yaml, file: "broken.yaml")
        } throws: { e in
            let e = e as! ScenarioError
            return e.line != nil && e.column != nil && e.message.hasPrefix("YAML")
        }
    }

    @Test func aDuplicateEmitterNameIsReportedWhereItRepeats() {
        let yaml =
            "gateways: [{id: gw-a, position: [0, 0]}]\nbeacons:\n  - {name: b, position: [1, 1]}\n  - {name: b, position: [2, 2]}\n"
        #expect {
            try ScenarioLoader.parse(yaml.replacingOccurrences(of: "{name: b,", with: "{name: b, type: named,"))
        } throws: { e in
            let e = e as! ScenarioError
            return e.line == 4 && e.message.contains("used twice")
        }
    }

    @Test func aFaultOnAnUnknownGatewayIsRejected() {
        let yaml = "gateways: [{id: gw-a, position: [0, 0]}]\nfaults: [{at_s: 1, gateway: gw-z, type: unplug}]\n"
        #expect(throws: ScenarioError.self) { try ScenarioLoader.parse(yaml) }
    }

    @Test func iBeaconFrameIsTheAppleLayout() {
        let uuid: [UInt8] = [
            0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
        ]
        let f = BeaconFrame.iBeacon(uuid: uuid, major: 0x0102, minor: 0x0304, measuredPower: -59)
        #expect(
            f.advertisingData() == [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + uuid + [1, 2, 3, 4, 0xC5])
        #expect(f.beaconID(address: BDAddress(rawValue: 1)) == "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-258-772")
    }

    @Test func eddystoneAndAltBeaconFramesAndIDs() {
        let ns: [UInt8] = Array(0..<10)
        let inst: [UInt8] = [0xA, 0xB, 0xC, 0xD, 0xE, 0xF]
        let uid = BeaconFrame.eddystoneUID(namespace: ns, instance: inst, txPowerAt0m: -20)
        let d = uid.advertisingData()
        #expect(d.count == 31)
        #expect(Array(d[3...13]) == [0x03, 0x03, 0xAA, 0xFE, 0x17, 0x16, 0xAA, 0xFE, 0x00, 0xEC, 0x00])
        #expect(uid.beaconID(address: BDAddress(rawValue: 1)) == "eddystone-00010203040506070809-0a0b0c0d0e0f")
        let url = BeaconFrame.eddystoneURL(url: "https://example.com/menu", txPowerAt0m: -20)
        // Scheme 0x03 "https://", "example", expansion 0x00 ".com/", "menu".
        #expect(Array(url.advertisingData()[13...]) == [0x03] + Array("example".utf8) + [0x00] + Array("menu".utf8))
        let id: [UInt8] = Array(repeating: 0xAB, count: 20)
        let alt = BeaconFrame.altBeacon(company: 0x0118, id: id, referenceRSSI: -60, reserved: 0)
        #expect(Array(alt.advertisingData()[3...8]) == [0x1B, 0xFF, 0x18, 0x01, 0xBE, 0xAC])
        #expect(alt.beaconID(address: BDAddress(rawValue: 1)) == "altbeacon-" + String(repeating: "ab", count: 20))
        let tlm = BeaconFrame.eddystoneTLM(batteryMillivolts: 3000, temperatureC: 21.5)
        #expect(tlm.beaconID(address: BDAddress("C0:11:22:33:44:55")!) == "mac-c01122334455")
        // TLM: VBATT 3000 mV = 0x0BB8, 21.5 °C = 0x1580, ADV_CNT 7, SEC_CNT 10 s = 100.
        #expect(
            Array(tlm.advertisingData(eventCount: 7, uptimeSeconds: 10)[7...]) == [
                0x11, 0x16, 0xAA, 0xFE, 0x20, 0x00, 0x0B, 0xB8, 0x15, 0x80, 0, 0, 0, 7, 0, 0, 0, 100,
            ])
    }

    @Test func everyFrameFitsInALegacyAdvertisement() throws {
        let s = try ScenarioLoader.load(path: Self.scenarios + "/office.yaml")
        for e in s.emitters {
            #expect(e.frame.advertisingData().count <= 31, "\(e.name)")
            #expect((e.scanResponse?.count ?? 0) <= 31, "\(e.name)")
        }
    }

    @Test func aWalkerFollowsItsWaypointsAtItsSpeed() {
        let m = Motion.path([Vec3(0, 0), Vec3(10, 0)], speed: 2, pause: 1, loop: true)
        #expect(m.position(at: 2.5) == Vec3(5, 0))
        #expect(m.position(at: 5.5) == Vec3(10, 0))  // pausing at the far end
        #expect(m.position(at: 8.5) == Vec3(5, 0))  // halfway back
        #expect(m.position(at: 12.0 + 2.5) == Vec3(5, 0))  // next lap
    }

    @Test func peripheralLinkKeysAndMaxConnectionsAreReadAndCheckedWithLineAndColumn() throws {
        let base = """
            name: keys
            gateways:
              - {id: gw-a, position: [0, 0], max_connections: 2}
            peripherals:
              - {name: p, position: [1, 1], notify_interval_ms: 250, flood: true, request_connection_update: true,
                 security_request: true, gatt_change_at_s: 12.5}
            faults:
              - {at_s: 3, gateway: gw-a, type: gatt_silence, peripheral: p}
            """
        let s = try ScenarioLoader.parse(base)
        #expect(s.gateways[0].maxConnections == 2)
        let link = s.emitters[0].link
        #expect(link.notifyInterval == 0.25 && link.flood && link.requestConnectionUpdate && link.securityRequest)
        #expect(link.gattChangeAt == 12.5)
        #expect(s.faults[0].kind == .gattSilence && s.faults[0].peripheral == "p")
        // Defaults: 1 s, no flood, nothing sent on connect, no change, four links.
        let plain = try ScenarioLoader.parse(
            "name: x\ngateways: [{id: g, position: [0, 0]}]\nperipherals: [{name: p, position: [1, 1]}]\n")
        #expect(plain.emitters[0].link == PeripheralLinkSpec() && plain.emitters[0].link.notifyInterval == 1)
        #expect(plain.gateways[0].maxConnections == 4)

        func error(_ yaml: String) -> ScenarioError? {
            do { _ = try ScenarioLoader.parse(yaml, file: "k.yaml") } catch let e as ScenarioError { return e } catch {}
            return nil
        }
        let tooFast = error(base.replacingOccurrences(of: "notify_interval_ms: 250", with: "notify_interval_ms: 1"))
        #expect(tooFast?.line == 5 && tooFast?.column == 53, "\(String(describing: tooFast))")
        #expect(tooFast?.message.contains("notify_interval_ms must be an integer in 2...3600000") == true)
        let beacon = error(
            base.replacingOccurrences(of: "peripherals:", with: "beacons:")
                .replacingOccurrences(of: "{name: p,", with: "{name: p, type: named,"))
        #expect(
            beacon?.line == 5 && beacon?.message.contains("applies to peripherals only") == true,
            "\(String(describing: beacon))")
        let limit = error(base.replacingOccurrences(of: "max_connections: 2", with: "max_connections: 0"))
        #expect(limit?.line == 3 && limit?.message.contains("max_connections") == true)
        let unknown = error(base.replacingOccurrences(of: "peripheral: p}", with: "peripheral: q}"))
        #expect(unknown?.line == 8 && unknown?.message.contains("unknown peripheral 'q'") == true)
        let wrongKind = error(base.replacingOccurrences(of: "type: gatt_silence", with: "type: silence"))
        #expect(wrongKind?.line == 8 && wrongKind?.message.contains("gatt_silence and peripheral_off only") == true)
        let notBool = error(base.replacingOccurrences(of: "flood: true", with: "flood: lots"))
        #expect(notBool?.line == 5 && notBool?.message.contains("flood must be true or false") == true)
    }
}

/// The simulator's broadcasting sensors (SimSensorFrames.swift), byte for byte as the formats document them.
@Suite struct SimSensorFrameTests {
    let address = BDAddress("A4:C1:38:00:00:01")!

    @Test func theBTHomeFrameCarriesPacketBatteryTemperatureAndHumidity() {
        let s = SimSensor(
            format: .bthome, address: address, temperatureC: 25.06, humidityPercent: 50.55,
            batteryPercent: 97, driftC: 0, packetIntervalSeconds: 10)
        // Flags, then service data 0xFCD2: device info 0x40, 0x00 packet 2 (t = 25 s), 0x01 97 %, 0x02 2506, 0x03 5055.
        #expect(
            BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 25)
                == [
                    0x02, 0x01, 0x06, 0x0E, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x02, 0x01, 0x61, 0x02, 0xCA, 0x09, 0x03,
                    0xBF, 0x13,
                ])
    }

    /// A button pressed every third packet: the press (0x3A, event 0x01) rides in packets 3, 6, …, after the readings,
    /// and in no other; each press is told apart from the last only by its packet id.
    @Test func aBTHomeButtonIsPressedInEveryNthPacket() {
        let s = SimSensor(
            format: .bthome, address: address, temperatureC: 25.06, humidityPercent: 50.55,
            batteryPercent: 97, driftC: 0, packetIntervalSeconds: 10, buttonEveryPackets: 3)
        #expect(
            BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 35)
                == [
                    0x02, 0x01, 0x06, 0x10, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x03, 0x01, 0x61, 0x02, 0xCA, 0x09, 0x03,
                    0xBF, 0x13,
                    0x3A, 0x01,
                ])
        #expect(BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 25).suffix(2) == [0xBF, 0x13], "packet 2: none")
        #expect((0..<10).filter(s.isPress) == [3, 6, 9])
    }

    @Test func theATCFrameRepeatsTheAdvertisersMACBigEndian() {
        let s = SimSensor(
            format: .atc1441, address: address, temperatureC: 23.0, humidityPercent: 46,
            batteryPercent: 93, driftC: 0)
        let d = BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 0)
        // MAC, 230 tenths of a degree, 46 %, 93 %, 2930 mV (the simulator's 2000 + 10 per percent), frame 0.
        #expect(
            Array(d[3...]) == [
                0x10, 0x16, 0x1A, 0x18, 0xA4, 0xC1, 0x38, 0x00, 0x00, 0x01, 0x00, 0xE6, 0x2E, 0x5D,
                0x0B, 0x72, 0x00,
            ])
    }

    /// MiBeacon v5 as an LYWSD03MMC sends it: frame control 0x5050 (v5, object, MAC), product 0x055B, the frame
    /// counter, the MAC little-endian, then one object per packet in turn: temperature, humidity, battery.
    @Test func theMiBeaconFrameSendsOneObjectPerPacketInTurn() {
        let s = SimSensor(
            format: .mibeacon, address: address, temperatureC: 25.06, humidityPercent: 50.55,
            batteryPercent: 97, driftC: 0, packetIntervalSeconds: 10)
        let head: [UInt8] = [0x02, 0x01, 0x06, 0x13, 0x16, 0x95, 0xFE, 0x50, 0x50, 0x5B, 0x05]
        let mac: [UInt8] = [0x01, 0x00, 0x00, 0x38, 0xC1, 0xA4]
        // Packet 0: 0x1004, 251 tenths of a degree.
        #expect(
            BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 5) == head + [0x00] + mac + [
                0x04, 0x10, 0x02, 0xFB, 0x00,
            ])
        // Packet 1: 0x1006, 506 tenths of a percent.
        #expect(
            BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 15) == head + [0x01] + mac + [
                0x06, 0x10, 0x02, 0xFA, 0x01,
            ])
        // Packet 2: 0x100A, 97 %; one octet shorter.
        var battery = head
        battery[3] = 0x12
        #expect(
            BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 25) == battery + [0x02] + mac + [
                0x0A, 0x10, 0x01, 0x61,
            ])
    }

    /// Sealed with a bindkey: frame control 0x5058 (encrypted too), the object's ciphertext, then the extended counter
    /// (the packet number's upper three octets) and a 4-octet MIC; the gateway opens it (SensorsEndToEndTests).
    @Test func anEncryptedMiBeaconFrameCarriesTheExtendedCounterAndTheMIC() {
        let s = SimSensor(
            format: .mibeacon, address: address, temperatureC: 25.06, humidityPercent: 50.55,
            batteryPercent: 97, driftC: 0, packetIntervalSeconds: 1, bindkey: [UInt8](repeating: 0x42, count: 16))
        // Packet 258 (0x102): temperature (258 % 3 == 0); frame counter 0x02, extended counter 01 00 00.
        let d = BeaconFrame.sensor(s).advertisingData(uptimeSeconds: 258.5)
        #expect(Array(d[3..<11]) == [0x1A, 0x16, 0x95, 0xFE, 0x58, 0x50, 0x5B, 0x05])
        #expect(d[11] == 0x02)
        #expect(Array(d[12..<18]) == [0x01, 0x00, 0x00, 0x38, 0xC1, 0xA4])
        let ciphertext = Array(d[18..<23])
        #expect(ciphertext != [0x04, 0x10, 0x02, 0xFB, 0x00], "sealed, not the object in the clear")
        #expect(Array(d[23..<26]) == [0x01, 0x00, 0x00])
        #expect(d.count == 30)
    }

    @Test func valuesDriftAndHoldStillWithinAPacket() {
        let s = SimSensor(format: .ruuvi, address: address, driftC: 2, driftPeriodSeconds: 60, packetIntervalSeconds: 5)
        #expect(s.values(at: 0).temperature != s.values(at: 15).temperature)
        let frame = BeaconFrame.sensor(s)
        #expect(frame.advertisingData(uptimeSeconds: 11) == frame.advertisingData(uptimeSeconds: 14.9))
        #expect(frame.advertisingData(uptimeSeconds: 14.9) != frame.advertisingData(uptimeSeconds: 15))
        #expect(frame.advertisingData(uptimeSeconds: 0).count <= 31)
    }
}
