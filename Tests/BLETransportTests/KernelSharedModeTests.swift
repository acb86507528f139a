import Testing

@testable import BLETransport

/// The pure parts of shared mode: the monitor channel's framing and the discovery keeper.
@Suite struct MonitorFramerTests {
    func consume(_ f: inout MonitorFramer, _ bytes: [UInt8]) throws -> [H4Packet] {
        try bytes.withUnsafeBytes { try f.consume($0) }
    }

    @Test func keepsOnlyThisAdaptersEventsAsH4Events() throws {
        var f = MonitorFramer(index: 0)
        // opcode 3 (event), index 0, length 6, Command Complete for HCI_Reset.
        let event: [UInt8] = [0x03, 0x00, 0x00, 0x00, 0x06, 0x00, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
        #expect(try consume(&f, event) == [H4Packet(type: .event, payload: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])])
        // The same event on index 1, and a command (opcode 2) on index 0, are not ours to deliver.
        #expect(try consume(&f, [0x03, 0x00, 0x01, 0x00, 0x06, 0x00, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]).isEmpty)
        #expect(try consume(&f, [0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x03, 0x0C, 0x00]).isEmpty)
    }

    @Test func shortMessageIsGarbageNotATrap() throws {
        var f = MonitorFramer(index: 0)
        #expect(try consume(&f, [0x03, 0x00, 0x00, 0x00, 0x06, 0x00, 0x0E]).isEmpty)
        #expect(f.garbageBytes == 7)
    }

    @Test func removalOfTheAdapterEndsTheStreamAsClosed() {
        var f = MonitorFramer(index: 2)
        #expect { try consume(&f, [0x01, 0x00, 0x02, 0x00, 0x00, 0x00]) } throws: {
            ($0 as? TransportError)?.kind == .closed
        }
    }
}

@Suite struct DiscoveryKeeperTests {
    // mgmt-api.txt: Start Discovery 0x0023 on index 0 with Address_Type 0x06 (LE public + random).
    let start: [UInt8] = [0x23, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06]
    let stop: [UInt8] = [0x24, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06]

    func complete(_ op: UInt8, status: UInt8) -> MgmtMessage {
        MgmtMessage(code: 0x0001, index: 0, parameters: [op, 0x00, status, 0x06])
    }
    func discovering(_ on: Bool) -> MgmtMessage {
        MgmtMessage(code: 0x0013, index: 0, parameters: [0x06, on ? 1 : 0])
    }

    @Test func startsAnLEDiscovery() {
        var k = DiscoveryKeeper(index: 0, restartInterval: .seconds(10))
        #expect(k.begin(now: .zero).map(\.bytes) == [start])
    }

    @Test func restartsItsOwnDiscoveryToClearTheDuplicateFilter() {
        var k = DiscoveryKeeper(index: 0, restartInterval: .seconds(10))
        _ = k.begin(now: .zero)
        #expect(k.handle(complete(0x23, status: 0), now: .seconds(0)).isEmpty)
        #expect(k.state == .ours)
        #expect(k.tick(now: .seconds(9)).isEmpty)
        #expect(k.tick(now: .seconds(10)).map(\.bytes) == [stop])
        #expect(k.handle(complete(0x24, status: 0), now: .seconds(10)).isEmpty)
        #expect(k.handle(discovering(false), now: .seconds(10)).map(\.bytes) == [start])
        #expect(k.starts == 2)
    }

    @Test func startsAgainWhenTheKernelStopsDiscovering() {
        var k = DiscoveryKeeper(index: 0, restartInterval: nil)
        _ = k.begin(now: .zero)
        _ = k.handle(complete(0x23, status: 0), now: .zero)
        _ = k.handle(discovering(true), now: .zero)
        #expect(k.handle(discovering(false), now: .seconds(300)).map(\.bytes) == [start])
    }

    @Test func ridesAlongAnotherClientsDiscoveryWithoutStoppingIt() {
        var k = DiscoveryKeeper(index: 0, restartInterval: .seconds(10))
        _ = k.begin(now: .zero)
        _ = k.handle(complete(0x23, status: 0x0A), now: .zero)  // Busy: bluetoothd is discovering
        #expect(k.state == .theirs)
        #expect(k.tick(now: .seconds(60)).isEmpty)
        #expect(k.handle(discovering(false), now: .seconds(61)).map(\.bytes) == [start])
    }

    @Test func waitsForPowerWhenTheAdapterIsOff() {
        var k = DiscoveryKeeper(index: 0, restartInterval: .seconds(10))
        _ = k.begin(now: .zero)
        _ = k.handle(complete(0x23, status: 0x0F), now: .zero)  // Not Powered
        #expect(k.tick(now: .seconds(30)).isEmpty)
        let powered = MgmtMessage(code: 0x0006, index: 0, parameters: [0x01, 0x02, 0x00, 0x00])
        #expect(k.handle(powered, now: .seconds(31)).map(\.bytes) == [start])
    }

    @Test func aLostReplyDoesNotWedgeIt() {
        var k = DiscoveryKeeper(index: 0, restartInterval: nil)
        _ = k.begin(now: .zero)
        #expect(k.tick(now: .seconds(4)).isEmpty)
        #expect(k.tick(now: .seconds(5)).map(\.bytes) == [start])
    }

    @Test func otherAdaptersEventsAreIgnored() {
        var k = DiscoveryKeeper(index: 0, restartInterval: nil)
        _ = k.begin(now: .zero)
        _ = k.handle(complete(0x23, status: 0), now: .zero)
        #expect(k.handle(MgmtMessage(code: 0x0013, index: 1, parameters: [0x06, 0]), now: .zero).isEmpty)
    }
}

@Suite struct DiscoveryKeeperCleanupTests {
    @Test func registersAMonitorFirstToTurnTheDuplicateFilterOff() {
        var k = DiscoveryKeeper(index: 0, restartInterval: nil, disableDuplicateFilter: true)
        let out = k.begin(now: .zero)
        #expect(out.map(\.code) == [0x0052, 0x0023])
        // Pattern_Count 1; AD type 0xFF, offset 0, length 2, value FF FF, padded to 31 bytes.
        #expect(out[0].parameters.count == 1 + 3 + 31)
        #expect(Array(out[0].parameters.prefix(6)) == [0x01, 0xFF, 0x00, 0x02, 0xFF, 0xFF])
        _ = k.handle(MgmtMessage(code: 0x0001, index: 0, parameters: [0x52, 0x00, 0x00, 0x07, 0x00]), now: .zero)
        #expect(k.monitorHandle == 7)
        // A restart does not register a second monitor.
        _ = k.handle(MgmtMessage(code: 0x0001, index: 0, parameters: [0x23, 0x00, 0x00, 0x06]), now: .zero)
        #expect(
            k.handle(MgmtMessage(code: 0x0013, index: 0, parameters: [0x06, 0]), now: .zero).map(\.code) == [0x0023])
    }

    @Test func finishStopsOurDiscoveryRemovesTheMonitorAndThenStaysQuiet() {
        var k = DiscoveryKeeper(index: 0, restartInterval: .seconds(10), disableDuplicateFilter: true)
        _ = k.begin(now: .zero)
        _ = k.handle(MgmtMessage(code: 0x0001, index: 0, parameters: [0x52, 0x00, 0x00, 0x07, 0x00]), now: .zero)
        _ = k.handle(MgmtMessage(code: 0x0001, index: 0, parameters: [0x23, 0x00, 0x00, 0x06]), now: .zero)
        #expect(
            k.finish().map(\.bytes) == [
                [0x24, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06],
                [0x53, 0x00, 0x00, 0x00, 0x02, 0x00, 0x07, 0x00],
            ])
        // The Discovering(false) that our own stop causes must not start a discovery nobody will stop.
        #expect(k.handle(MgmtMessage(code: 0x0013, index: 0, parameters: [0x06, 0]), now: .seconds(1)).isEmpty)
        #expect(k.tick(now: .seconds(60)).isEmpty)
    }
}

/// The monitor channel's index messages, as the shared-mode supervisor reads them (BlueZ doc/btsnoop.txt).
@Suite struct KernelIndexEventTests {
    @Test func newDeletedOpenAndCloseIndexAreTheAdaptersArrivalRemovalPowerOnAndPowerOff() {
        // New Index on hci1 carries Type(1) Bus(1) BD_ADDR(6) Name(8).
        let new: [UInt8] =
            [0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x01, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
            + Array("hci1".utf8) + [0, 0, 0, 0]
        #expect(KernelIndexEvent.parse(new) == KernelIndexEvent(index: 1, change: .added))
        #expect(
            KernelIndexEvent.parse([0x01, 0x00, 0x01, 0x00, 0x00, 0x00]) == KernelIndexEvent(index: 1, change: .removed)
        )
        #expect(
            KernelIndexEvent.parse([0x08, 0x00, 0x00, 0x00, 0x00, 0x00]) == KernelIndexEvent(index: 0, change: .up))
        #expect(
            KernelIndexEvent.parse([0x09, 0x00, 0x00, 0x00, 0x00, 0x00]) == KernelIndexEvent(index: 0, change: .down))
    }

    @Test func packetsNotesAndShortMessagesAreNoIndexEvents() {
        // An event packet (opcode 3), Index Info (opcode 10), a header cut short, a length beyond the data.
        #expect(KernelIndexEvent.parse([0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x0E, 0x00]) == nil)
        #expect(KernelIndexEvent.parse([0x0A, 0x00, 0x00, 0x00, 0x00, 0x00]) == nil)
        #expect(KernelIndexEvent.parse([0x09, 0x00, 0x00]) == nil)
        #expect(KernelIndexEvent.parse([0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00]) == nil)
    }
}

/// The key a pairing distributes, as the monitor channel copies the management interface's New Identity Resolving Key
/// event (BlueZ doc/mgmt-api.txt, event 0x0018; monitor control event, opcode 17).
@Suite struct KernelIdentityKeyTests {
    /// hci0, cookie 1; Store_Hint 1, Random_Address 4C:6B:86:AA:E9:CA, Key: Address 5C:F3:70:00:00:01, LE Public,
    /// Value = Core v5.4 Vol 3 Part H Appendix D.7's IRK, least significant octet first as the event carries it.
    static let event: [UInt8] =
        [0x11, 0x00, 0x00, 0x00, 0x24, 0x00] + [0x01, 0x00, 0x00, 0x00] + [0x18, 0x00] + [0x01]
        + [0xCA, 0xE9, 0xAA, 0x86, 0x6B, 0x4C] + [0x01, 0x00, 0x00, 0x70, 0xF3, 0x5C] + [0x01]
        + [0x9B, 0x7D, 0x39, 0x0A, 0xA6, 0x10, 0x10, 0x34, 0x05, 0xAD, 0xC8, 0x57, 0xA3, 0x34, 0x02, 0xEC]

    @Test func newIdentityResolvingKeyGivesTheIdentityAndTheKeyMostSignificantOctetFirst() {
        let key = KernelIdentityKey.parse(Self.event)
        #expect(key?.index == 0)
        #expect(key?.randomAddress == BDAddress("4C:6B:86:AA:E9:CA"))
        #expect(key?.identity == BDAddress("5C:F3:70:00:00:01") && key?.identityIsPublic == true)
        #expect(key.map { HexDigits.string($0.key) } == "ec0234a357c8ad05341010a60a397d9b")
        // Address_Type 0x02: a random static identity.
        var random = Self.event
        random[25] = 0x02
        #expect(KernelIdentityKey.parse(random)?.identityIsPublic == false)
    }

    @Test func otherControlEventsOtherMessagesAndShortOnesAreNoKey() {
        // New Long Term Key (0x000A) in the same frame; an HCI event packet (opcode 3); BR/EDR address type 0x00;
        // the key one octet short.
        var ltk = Self.event
        ltk[10] = 0x0A
        #expect(KernelIdentityKey.parse(ltk) == nil)
        var packet = Self.event
        packet[0] = 0x03
        #expect(KernelIdentityKey.parse(packet) == nil)
        var bredr = Self.event
        bredr[25] = 0x00
        #expect(KernelIdentityKey.parse(bredr) == nil)
        var short = Array(Self.event.dropLast())
        short[4] = 0x23
        #expect(KernelIdentityKey.parse(short) == nil)
    }
}
