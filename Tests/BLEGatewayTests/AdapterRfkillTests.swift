import BLETransport
import Testing

/// /dev/rfkill records (include/uapi/linux/rfkill.h, struct rfkill_event: idx u32, type u8, op u8, soft u8, hard u8).
@Suite struct AdapterRfkillTests {
    @Test func aBluetoothSoftBlockChangeParsesFromItsEightBytes() {
        // idx 3, type 2 (bluetooth), op 2 (change), soft 1, hard 0 — as `rfkill block bluetooth` produces.
        let e = RfkillEvent.parse([0x03, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x00])
        #expect(e == RfkillEvent(index: 3, kind: .bluetooth, operation: .change, soft: true, hard: false))
    }

    @Test func aLongerRecordOfANewerKernelParsesByItsFirstEightBytes() {
        // Linux 5.11+ appends hard_block_reasons (u8).
        let e = RfkillEvent.parse([0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01, 0x01])
        #expect(e == RfkillEvent(index: 1, kind: .bluetooth, operation: .add, soft: false, hard: true))
    }

    @Test func aShortRecordIsRejectedAtEveryLength() {
        let full: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x00]
        for n in 0..<8 { #expect(RfkillEvent.parse(full.prefix(n)) == nil) }
    }

    @Test func anUnblockIsWrittenAsAChangeWithSoftCleared() {
        let e = RfkillEvent(index: 7, kind: .bluetooth, operation: .change, soft: false, hard: false)
        #expect(e.bytes == [0x07, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00])
    }

    @Test func unknownCodesPrintByNumber() {
        #expect(RfkillEvent.Kind(rawValue: 9).description == "rfkill type 9")
        #expect(RfkillEvent.Operation(rawValue: 8).description == "rfkill op 8")
    }
}
