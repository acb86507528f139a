import BLETransport
import Testing

@testable import BLEHCI

/// LE Extended Advertising Report parameters (after the subevent code) for one report (§7.7.65.13).
func extendedReport(
    eventType: UInt16, address: BDAddress = BDAddress("C0:11:22:33:44:55")!, sid: UInt8 = 1, rssi: Int8 = -70,
    data: [UInt8]
) -> [UInt8] {
    var w = ByteWriter()
    w.u8(1)
    w.le16(eventType)
    w.u8(0x01)
    address.write(to: &w)
    w.u8(0x01)  // primary PHY LE 1M
    w.u8(0x02)  // secondary PHY LE 2M
    w.u8(sid)
    w.u8(0x7F)  // Tx power not available
    w.i8(rssi)
    w.le16(0)
    w.u8(0)
    w.append([UInt8](repeating: 0, count: 6))
    w.u8(UInt8(data.count))
    w.append(data)
    return w.bytes
}

/// The report parsed from `extendedReport(...)` bytes; the vectors are built well-formed, so a nil is a bug.
func fragment(
    eventType: UInt16, address: BDAddress = BDAddress("C0:11:22:33:44:55")!, sid: UInt8 = 1, rssi: Int8 = -70,
    data: [UInt8]
) -> LEAdvertisingReport {
    firstReport(extendedReport(eventType: eventType, address: address, sid: sid, rssi: rssi, data: data))!
}

func firstReport(_ params: [UInt8]) -> LEAdvertisingReport? {
    var out: LEAdvertisingReport?
    _ = LEAdvertisingReport.parseExtended(params[...]) { if out == nil { out = $0 } }
    return out
}

@Suite struct ExtendedAdvertisingReassemblerTests {
    let incomplete: UInt16 = 0x0020  // Data_Status 0b01
    let truncated: UInt16 = 0x0040  // Data_Status 0b10

    @Test func completeSingleReportPassesThroughWithoutCopying() throws {
        var r = ExtendedAdvertisingReassembler()
        let report = fragment(eventType: 0x0000, data: [0x02, 0x01, 0x06])
        let result = r.accept(report, now: .zero)
        let out = try #require(result)
        #expect(Array(out.report.data) == [0x02, 0x01, 0x06])
        #expect(out.fragments == 1)
        #expect(!out.isTruncated)
        #expect(r.pendingEntries == 0)
    }

    @Test func fragmentsWithTheSameAddressAndSIDAreJoinedInOrder() throws {
        var r = ExtendedAdvertisingReassembler()
        let a = fragment(eventType: incomplete, data: [1, 2, 3])
        let b = fragment(eventType: incomplete, data: [4, 5])
        let c = fragment(eventType: 0x0000, rssi: -65, data: [6])
        let pending = r.accept(a, now: .zero)
        #expect(pending == nil)
        let pending2 = r.accept(b, now: .milliseconds(1))
        #expect(pending2 == nil)
        let result = r.accept(c, now: .milliseconds(2))
        let out = try #require(result)
        #expect(Array(out.report.data) == [1, 2, 3, 4, 5, 6])
        #expect(out.fragments == 3)
        #expect(out.report.rssi == -65)
        #expect(out.report.dataStatus == .complete)
        #expect(r.counters.reassembled == 1)
        #expect(r.pendingBytes == 0)
    }

    @Test func differentSIDsFromOneAdvertiserAreKeptApart() throws {
        var r = ExtendedAdvertisingReassembler()
        _ = r.accept(fragment(eventType: incomplete, sid: 1, data: [1]), now: .zero)
        _ = r.accept(fragment(eventType: incomplete, sid: 2, data: [9]), now: .zero)
        let result = r.accept(
            fragment(eventType: 0, sid: 1, data: [2]),
            now: .zero)
        let out = try #require(result)
        #expect(Array(out.report.data) == [1, 2])
        #expect(r.pendingEntries == 1)
    }

    @Test func truncatedChainDeliversWhatThereIsFlagged() throws {
        var r = ExtendedAdvertisingReassembler()
        _ = r.accept(fragment(eventType: incomplete, data: [1, 2]), now: .zero)
        let result = r.accept(
            fragment(eventType: truncated, data: [3]),
            now: .zero)
        let out = try #require(result)
        #expect(out.isTruncated)
        #expect(out.report.dataStatus == .truncated)
        #expect(Array(out.report.data) == [1, 2, 3])
        #expect(r.counters.truncated == 1)
    }

    @Test func entryCapEvictsTheOldestAndCountsIt() throws {
        var config = ExtendedAdvertisingReassembler.Configuration()
        config.maxPendingEntries = 2
        var r = ExtendedAdvertisingReassembler(configuration: config)
        for (i, addr) in ["C0:00:00:00:00:01", "C0:00:00:00:00:02", "C0:00:00:00:00:03"].enumerated() {
            let rep = fragment(
                eventType: incomplete, address: BDAddress(addr)!,
                data: [UInt8(i)])
            let pending = r.accept(rep, now: .milliseconds(i))
            #expect(pending == nil)
        }
        #expect(r.pendingEntries == 2)
        #expect(r.counters.evicted == 1)
        // The first advertiser's chain was evicted: its closing fragment stands alone.
        let end = fragment(
            eventType: 0, address: BDAddress("C0:00:00:00:00:01")!,
            data: [7])
        let alone = r.accept(end, now: .milliseconds(4))
        #expect(alone.map { Array($0.report.data) } == [7])
    }

    @Test func byteCapEvicts() throws {
        var config = ExtendedAdvertisingReassembler.Configuration()
        config.maxPendingBytes = 300
        var r = ExtendedAdvertisingReassembler(configuration: config)
        let big = [UInt8](repeating: 0xAB, count: 200)
        _ = r.accept(fragment(eventType: incomplete, sid: 1, data: big), now: .zero)
        _ = r.accept(fragment(eventType: incomplete, sid: 2, data: big), now: .zero)
        #expect(r.pendingBytes <= 300)
        #expect(r.counters.evicted == 1)
    }

    @Test func chainThatStopsIsExpiredAfterMaxAge() throws {
        var r = ExtendedAdvertisingReassembler()
        _ = r.accept(fragment(eventType: incomplete, sid: 1, data: [1]), now: .zero)
        _ = r.accept(fragment(eventType: 0, sid: 3, data: [2]), now: .seconds(3))
        #expect(r.pendingEntries == 0)
        #expect(r.counters.expired == 1)
    }

    @Test func chainLongerThan1650OctetsIsDropped() throws {
        var r = ExtendedAdvertisingReassembler()
        let chunk = [UInt8](repeating: 0x11, count: 229)
        var delivered = 0
        for _ in 0..<8 {
            if r.accept(fragment(eventType: incomplete, data: chunk), now: .zero) != nil {
                delivered += 1
            }
        }
        #expect(delivered == 0)
        #expect(r.counters.oversized == 1)
    }

    @Test func legacyReportsPassThrough() throws {
        var r = ExtendedAdvertisingReassembler()
        let params: [UInt8] = [0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x00, 0xC4]
        var rep: LEAdvertisingReport?
        _ = LEAdvertisingReport.parseLegacy(params[...]) { rep = $0 }
        let out = r.accept(try #require(rep), now: .zero)
        #expect(out?.fragments == 1)
    }
}
