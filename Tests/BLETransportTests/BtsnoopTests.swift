import BLETestSupport
import Testing

@testable import BLETransport

@Suite struct BtsnoopTests {
    // HCI_Reset and its Command Complete (Core v5.4, Vol 4, Part E, §7.3.2, §7.7.14).
    let reset = H4Packet(type: .command, payload: [0x03, 0x0C, 0x00])
    let resetComplete = H4Packet(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])

    @Test func headerIsMagicVersionOneAndDatalink1002() {
        #expect(
            Btsnoop.header() == [
                0x62, 0x74, 0x73, 0x6E, 0x6F, 0x6F, 0x70, 0x00,
                0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x03, 0xEA,
            ])
    }

    @Test func recordIsBigEndianWithDirectionAndCommandEventFlags() {
        // 1970-01-01 00:00:01 UTC = 0x00E03AB44A676000 + 1_000_000 µs since year 0.
        let bytes = Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 1_000_000)
        #expect(
            bytes == [
                0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 0,
                0x00, 0xE0, 0x3A, 0xB4, 0x4A, 0x76, 0xA2, 0x40,
                0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00,
            ])
        let sent = Btsnoop.record(reset, direction: .sent, unixMicroseconds: 0)
        #expect(sent[8..<12] == [0, 0, 0, 2])  // sent, command
    }

    @Test func writtenRecordsReadBackIdentically() throws {
        let file =
            Btsnoop.header() + Btsnoop.record(reset, direction: .sent, unixMicroseconds: 1_700_000_000_000_000)
            + Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 1_700_000_000_000_250)
        var reader = try BtsnoopReader(file)
        #expect(reader.datalink == .h4)
        let a0 = reader.next()
        let b0 = reader.next()
        let a = try #require(a0)
        let b = try #require(b0)
        #expect(reader.next() == nil)
        #expect(a.packet == reset && a.direction == .sent && a.unixMicroseconds == 1_700_000_000_000_000)
        #expect(b.packet == resetComplete && b.direction == .received && b.unixMicroseconds == 1_700_000_000_000_250)
        #expect(reader.truncatedRecords == 0)
    }

    @Test func truncatedFinalRecordIsCountedAndSkipped() throws {
        let whole = Btsnoop.record(resetComplete, direction: .received, unixMicroseconds: 5)
        let file = Btsnoop.header() + whole + whole.dropLast(3)
        var reader = try BtsnoopReader(file)
        #expect(reader.next()?.packet == resetComplete)
        #expect(reader.next() == nil)
        #expect(reader.truncatedRecords == 1)
    }

    @Test func truncatedRecordHeaderIsCountedToo() throws {
        var reader = try BtsnoopReader(Btsnoop.header() + [0, 0, 0, 7, 0, 0])
        #expect(reader.next() == nil)
        #expect(reader.truncatedRecords == 1)
    }

    @Test func badMagicIsABadCaptureError() {
        #expect { try BtsnoopReader(Array("snoop\0\0\0".utf8) + [0, 0, 0, 1, 0, 0, 3, 0xEA]) } throws: {
            ($0 as? TransportError)?.kind == .badCapture
        }
    }

    @Test func versionOtherThanOneIsRejected() {
        #expect { try BtsnoopReader(Btsnoop.magic + [0, 0, 0, 2, 0, 0, 3, 0xEA]) } throws: {
            ($0 as? TransportError)?.kind == .badCapture
        }
    }

    @Test func unknownDatalinkIsRejectedByName() {
        // 1001 is "HCI UART un-encapsulated", which we do not read.
        #expect { try BtsnoopReader(Btsnoop.magic + [0, 0, 0, 1, 0, 0, 3, 0xE9]) } throws: {
            ($0 as? TransportError)?.message.contains("1001") == true
        }
    }

    @Test func shortHeaderIsRejected() {
        #expect { try BtsnoopReader(Btsnoop.magic + [0, 0]) } throws: { ($0 as? TransportError)?.kind == .badCapture }
    }

    @Test func monitorDatalinkMapsOpcodesToPacketTypesAndIndex() throws {
        // flags = index 1 << 16 | opcode 3 (event packet); data has no H4 indicator (btmon's btsnoop format).
        var w = ByteWriter()
        w.append(Btsnoop.magic)
        w.be32(1)
        w.be32(2001)
        for (flags, data) in [
            (UInt32(0x0001_0003), resetComplete.payload), (UInt32(0x0001_0002), reset.payload),
            (UInt32(0x0000_000C), [0x41, 0x42]),
        ] {  // opcode 12 = system note: no packet
            w.be32(UInt32(data.count))
            w.be32(UInt32(data.count))
            w.be32(flags)
            w.be32(0)
            w.be64(Btsnoop.unixEpochMicroseconds)
            w.append(data)
        }
        var reader = try BtsnoopReader(w.bytes)
        let first0 = reader.next()
        let first = try #require(first0)
        #expect(first.packet == resetComplete && first.direction == .received && first.controllerIndex == 1)
        let second0 = reader.next()
        let second = try #require(second0)
        #expect(second.packet == reset && second.direction == .sent)
        #expect(reader.next() == nil)
    }
}

@Suite struct MonitorCaptureReplayTests {
    /// btmon captures every adapter; a scanner and an advertiser side by side (hci1 speaks first here) must replay as
    /// the scanner, whose advertising reports are the point of the capture.
    @Test func aMonitorCaptureReplaysTheAdapterThatReportsAdvertisements() async throws {
        let advertiserReply: [UInt8] = [0x0E, 0x04, 0x01, 0x0A, 0x20, 0x00]  // Command Complete, LE Set Adv Enable
        // LE Advertising Report: one ADV_NONCONN_IND from 11:22:33:44:55:66 with Flags, RSSI -60.
        let report: [UInt8] = [
            0x3E, 0x0F, 0x02, 0x01, 0x03, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
            0x03, 0x02, 0x01, 0x06, 0xC4,
        ]
        var w = ByteWriter()
        w.append(Btsnoop.magic)
        w.be32(1)
        w.be32(2001)
        for (flags, data) in [(UInt32(0x0001_0003), advertiserReply), (UInt32(0x0000_0003), report)] {
            w.be32(UInt32(data.count))
            w.be32(UInt32(data.count))
            w.be32(flags)
            w.be32(0)
            w.be64(Btsnoop.unixEpochMicroseconds)
            w.append(data)
        }
        let replay = try CaptureReplayTransport(name: "monitor", bytes: w.bytes, clock: ManualClock())
        var got: [H4Packet] = []
        for try await p in replay.incoming { got.append(p) }
        #expect(got == [H4Packet(type: .event, payload: report)])
    }
}
