import Testing

@testable import BLEGateway

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

    /// Shared mode: the kernel adds the Flags itself (Add Advertising's discoverable flag), and refuses data that
    /// carries them; the name keeps room for them within the 31 octets.
    @Test func withoutFlagsForTheKernelToAddThemAndTheNameStillFits() {
        #expect(
            Array(Enrolment.advertisingData(name: "BLEGateway", flags: false))
                == Array(Enrolment.advertisingData(name: "BLEGateway").dropFirst(3)))
        let d = Enrolment.advertisingData(name: "BLEGateway in the second-floor meeting room", flags: false)
        #expect(d.count == 28 && d[8] == 0x13 && d[9] == 0x08)
    }

    /// What a shared adapter must be for the kernel to pair (management Current_Settings): each refusal says what
    /// to do.
    @Test func sharedModeNamesWhatTheAdapterLacks() {
        let ready: UInt32 = 1 << 0 | 1 << 4 | 1 << 9
        #expect(SharedEnrolment.refusal(settings: ready, adapter: "hci0") == nil)
        #expect(SharedEnrolment.refusal(settings: ready & ~1, adapter: "hci0")?.contains("powered off") == true)
        #expect(SharedEnrolment.refusal(settings: ready & ~(1 << 9), adapter: "hci0")?.contains("le on") == true)
        #expect(SharedEnrolment.refusal(settings: ready & ~(1 << 4), adapter: "hci0")?.contains("pairable on") == true)
    }
}
