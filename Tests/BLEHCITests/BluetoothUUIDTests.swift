import Testing

@testable import BLEHCI

@Suite struct BluetoothUUIDTests {
    @Test func places16And32BitAliasesInTheBaseUUID() {
        // Core v5.4, Vol 3, Part B, §2.5.1: 128-bit = alias × 2^96 + Base UUID.
        #expect(BluetoothUUID(uuid16: 0x180D) == BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB"))
        #expect(BluetoothUUID(uuid32: 0x1234_5678) == BluetoothUUID("12345678-0000-1000-8000-00805F9B34FB"))
        #expect(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")?.uuid16 == 0x180D)
        #expect(BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")?.uuid32 == nil)
    }

    @Test func parsesAndPrintsTheTextForms() {
        #expect(BluetoothUUID("0xfeaa") == BluetoothUUID(uuid16: 0xFEAA))
        #expect(BluetoothUUID("feaa")?.description == "FEAA")
        #expect(BluetoothUUID(uuid32: 0x0001_FEAA).description == "0001FEAA")
        let air = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
        #expect(BluetoothUUID("e2c56db5dffb48d2b060d0f5a71096e0")?.description == air)
        for bad in ["", "FEA", "FEAAA", "GGGG", "E2C56DB5-DFFB48D2-B060-D0F5A71096E0", String(air.dropLast())] {
            #expect(BluetoothUUID(bad) == nil, "\(bad)")
        }
    }

    @Test func readsBigAndLittleEndianOctets() {
        let be: [UInt8] = [
            0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
        ]
        #expect(BluetoothUUID(bigEndianBytes: be[...]) == BluetoothUUID(littleEndianBytes: be.reversed()[...]))
        #expect(BluetoothUUID(bigEndianBytes: be.prefix(15)) == nil)
    }
}
