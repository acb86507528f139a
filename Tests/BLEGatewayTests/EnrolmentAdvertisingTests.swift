import BLEGateway
import Testing

/// What a phone's Bluetooth settings see while the gateway enrols, in literal bytes (Core Specification Supplement,
/// Part A: Flags §1.3, Appearance §1.12, 16-bit Service UUIDs §1.1, Local Name §1.2).
@Suite struct EnrolmentAdvertisingTests {
    @Test func aHeartRateSensorWithItsCompleteName() {
        #expect(
            Enrolment.advertisingData(name: "BLEGateway") == [
                0x02, 0x01, 0x06,  // LE General Discoverable, BR/EDR Not Supported
                0x03, 0x19, 0x40, 0x03,  // Appearance 0x0340, Generic Heart Rate Sensor
                0x03, 0x03, 0x0D, 0x18,  // Heart Rate service 0x180D
                0x0B, 0x09, 0x42, 0x4C, 0x45, 0x47, 0x61, 0x74, 0x65, 0x77, 0x61, 0x79,  // Complete Local Name
            ])
    }

    @Test func aNameTooLongForThirtyOneOctetsIsShortenedAndSaysSo() {
        let d = Enrolment.advertisingData(name: "BLEGateway in the second-floor meeting room")
        #expect(d.count == 31)
        #expect(d[11] == 0x13 && d[12] == 0x08)  // 18 octets of Shortened Local Name
        #expect(Array(d[13...]) == Array("BLEGateway in the ".utf8))
    }
}
