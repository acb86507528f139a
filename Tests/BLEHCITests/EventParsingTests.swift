import BLETransport
import Testing

@testable import BLEHCI

/// Event packets as literal H4 bytes (indicator 0x04 first), parsed the way the controller loop parses them.
func parseEvent(_ h4: [UInt8]) -> HCIEvent? {
    precondition(h4.first == 0x04)
    return HCIEvent.parse(h4.dropFirst())
}

@Suite struct EventParsingTests {
    @Test func resetCommandCompleteGrantsOneCreditWithSuccess() throws {
        guard case .commandComplete(let cc) = parseEvent([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]) else {
            Issue.record("not a Command Complete")
            return
        }
        #expect(cc.numHCICommandPackets == 1)
        #expect(cc.opcode == .reset)
        #expect(Array(cc.returnParameters) == [0x00])
        let r = ResetCommand.parseResponse(cc.returnParameters)
        #expect(r != nil)
    }

    @Test func readBDADDRReturnParametersReadLeastSignificantFirst() {
        guard
            case .commandComplete(let cc) = parseEvent(
                [0x04, 0x0E, 0x0A, 0x01, 0x09, 0x10, 0x00, 0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00])
        else {
            Issue.record("not a Command Complete")
            return
        }
        guard case .success(let addr)? = ReadBDADDRCommand.parseResponse(cc.returnParameters) else {
            Issue.record("no address")
            return
        }
        #expect(addr == BDAddress("00:1A:7D:DA:71:13"))
    }

    @Test func readLocalVersionInformationParsesEveryField() {
        // HCI version 5.4 (0x0D), revision 0x1234, LMP 0x0D, manufacturer 0x005D, LMP subversion 0x5678.
        let ev = parseEvent([0x04, 0x0E, 0x0C, 0x01, 0x01, 0x10, 0x00, 0x0D, 0x34, 0x12, 0x0D, 0x5D, 0x00, 0x78, 0x56])
        guard case .commandComplete(let cc) = ev,
            case .success(let v)? = ReadLocalVersionInformationCommand.parseResponse(cc.returnParameters)
        else {
            Issue.record("did not parse")
            return
        }
        #expect(
            v
                == LocalVersionInformation(
                    hciVersion: 0x0D, hciSubversion: 0x1234, lmpVersion: 0x0D,
                    companyIdentifier: 0x005D, lmpSubversion: 0x5678))
    }

    @Test func failedCommandCompleteYieldsTheStatus() {
        guard case .commandComplete(let cc) = parseEvent([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x0C]) else {
            Issue.record("not a Command Complete")
            return
        }
        guard case .failure(let e)? = LESetScanEnableCommand.parseResponse(cc.returnParameters) else {
            Issue.record("no failure")
            return
        }
        #expect(e == .commandFailed(.leSetScanEnable, .commandDisallowed))
    }

    @Test func shortReturnParametersAreMalformedNotATrap() {
        // LE Read Buffer Size answered with the status only.
        guard case .commandComplete(let cc) = parseEvent([0x04, 0x0E, 0x04, 0x01, 0x02, 0x20, 0x00]) else {
            Issue.record("not a Command Complete")
            return
        }
        #expect(LEReadBufferSizeCommand.parseResponse(cc.returnParameters) == nil)
        #expect(ReadLocalVersionInformationCommand.parseResponse([][...]) == nil)
    }

    @Test func leBufferSizeV1AndV2() {
        var c = ByteCursor([0xFB, 0x00, 0x0F])
        #expect(
            LEReadBufferSizeCommand.parseReturnParameters(&c)
                == LEBufferSize(
                    leACLDataPacketLength: 251, totalNumLEACLDataPackets: 15))
        var c2 = ByteCursor([0xFB, 0x00, 0x0F, 0x00, 0x00, 0x00])
        #expect(
            LEReadBufferSizeV2Command.parseReturnParameters(&c2)
                == LEBufferSize(
                    leACLDataPacketLength: 251, totalNumLEACLDataPackets: 15, isoDataPacketLength: 0,
                    totalNumISODataPackets: 0))
    }

    @Test func commandStatusCarriesStatusCreditAndOpcode() {
        guard case .commandStatus(let cs) = parseEvent([0x04, 0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20]) else {
            Issue.record("not a Command Status")
            return
        }
        #expect(cs == HCIEvent.CommandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection))
    }

    @Test func disconnectionCompleteCarriesHandleAndReason() {
        guard case .disconnectionComplete(let d) = parseEvent([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x08]) else {
            Issue.record("not a Disconnection Complete")
            return
        }
        #expect(d == HCIEvent.DisconnectionComplete(status: .success, handle: 0x0040, reason: .connectionTimeout))
    }

    @Test func hardwareErrorCarriesItsCode() {
        guard case .hardwareError(let code) = parseEvent([0x04, 0x10, 0x01, 0x2A]) else {
            Issue.record("not a Hardware Error")
            return
        }
        #expect(code == 0x2A)
    }

    @Test func numberOfCompletedPacketsListsHandleCountPairs() {
        guard
            case .numberOfCompletedPackets(let e) = parseEvent(
                [0x04, 0x13, 0x09, 0x02, 0x40, 0x00, 0x01, 0x00, 0x41, 0x00, 0x03, 0x00])
        else {
            Issue.record("not Number Of Completed Packets")
            return
        }
        #expect(e == [.init(handle: 0x40, count: 1), .init(handle: 0x41, count: 3)])
        #expect(parseEvent([0x04, 0x13, 0x05, 0x02, 0x40, 0x00, 0x01, 0x00]) == nil)
    }

    @Test func leConnectionCompleteAsCentral() {
        // Subevent 0x01, success, handle 0x0040, central, random peer C0:11:22:33:44:55, interval 0x0028,
        // latency 0, timeout 0x01F4, clock accuracy 0.
        let bytes: [UInt8] = [
            0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0,
            0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00,
        ]
        guard case .leConnectionComplete(let c) = parseEvent(bytes) else {
            Issue.record("no connection")
            return
        }
        #expect(c.status == .success)
        #expect(c.handle == 0x0040)
        #expect(c.role == 0)
        #expect(c.peerAddressType == .random)
        #expect(c.peerAddress == BDAddress("C0:11:22:33:44:55"))
        #expect(c.connectionInterval == 0x28)
        #expect(c.supervisionTimeout == 0x01F4)
        #expect(c.localResolvablePrivateAddress == nil)
    }

    @Test func leEnhancedConnectionCompleteFailureToEstablish() {
        var bytes: [UInt8] = [0x04, 0x3E, 0x1F, 0x0A, 0x3E, 0x00, 0x00, 0x00, 0x00, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]
        bytes += [UInt8](repeating: 0, count: 12) + [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        guard case .leConnectionComplete(let c) = parseEvent(bytes) else {
            Issue.record("no connection")
            return
        }
        #expect(c.status == .connectionFailedToBeEstablished)
        #expect(c.subevent == .enhancedConnectionComplete)
        #expect(c.localResolvablePrivateAddress == BDAddress(rawValue: 0))
    }

    @Test func leConnectionUpdateComplete() {
        guard
            case .leConnectionUpdateComplete(let u) = parseEvent(
                [0x04, 0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x06, 0x00, 0x00, 0x00, 0x48, 0x00])
        else {
            Issue.record("no update")
            return
        }
        #expect(
            u
                == HCIEvent.LEConnectionUpdateComplete(
                    status: .success, handle: 0x40, connectionInterval: 6, peripheralLatency: 0,
                    supervisionTimeout: 0x48))
    }

    @Test func legacyAdvertisingReportIsValidatedAndWalkedWithoutCopying() {
        // One ADV_NONCONN_IND from random C0:11:22:33:44:55 with Flags (02 01 06), RSSI -60 (0xC4).
        let bytes: [UInt8] = [
            0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x03,
            0x02, 0x01, 0x06, 0xC4,
        ]
        guard case .leAdvertisingReport(let params) = parseEvent(bytes) else {
            Issue.record("no report")
            return
        }
        var reports: [LEAdvertisingReport] = []
        #expect(LEAdvertisingReport.parseLegacy(params) { reports.append($0) } == 1)
        #expect(reports.first?.rssi == -60)
        #expect(reports.first.map { Array($0.data) } == [0x02, 0x01, 0x06])
        #expect(reports.first?.address == BDAddress("C0:11:22:33:44:55"))
    }

    @Test func advertisingReportWithDataRunningPastTheEventIsMalformed() {
        // Data_Length 0x10 but only three data octets follow.
        let bytes: [UInt8] = [
            0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x10,
            0x02, 0x01, 0x06, 0xC4,
        ]
        #expect(parseEvent(bytes) == nil)
    }

    @Test func unknownEventsAndSubeventsAreKeptWithTheirBytes() {
        guard case .other(let code, let p) = parseEvent([0x04, 0x57, 0x02, 0xAA, 0xBB]) else {
            Issue.record("not kept")
            return
        }
        #expect(code.rawValue == 0x57)
        #expect(Array(p) == [0xAA, 0xBB])
        guard case .leMeta(let sub, let q) = parseEvent([0x04, 0x3E, 0x02, 0x7F, 0x01]) else {
            Issue.record("not kept")
            return
        }
        #expect(sub.rawValue == 0x7F)
        #expect(Array(q) == [0x01])
    }

    /// §7.7.65.6: subevent 0x06, Connection_Handle 0x0040, Interval_Min 24, Interval_Max 40, Max_Latency 0,
    /// Timeout 400 (4 s); one octet short is malformed, not a guess.
    @Test func remoteConnectionParameterRequestIsParsedWithItsRanges() {
        let bytes: [UInt8] = [0x04, 0x3E, 0x0B, 0x06, 0x40, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x90, 0x01]
        guard case .leRemoteConnectionParameterRequest(let handle, let p) = parseEvent(bytes) else {
            Issue.record("not parsed")
            return
        }
        #expect(handle == 0x0040)
        #expect(p == LEConnectionParameters(intervalMin: 24, intervalMax: 40, maxLatency: 0, supervisionTimeout: 400))
        #expect(parseEvent([0x04, 0x3E, 0x0A, 0x06, 0x40, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x90]) == nil)
    }

    @Test func lengthThatDisagreesWithTheBytesIsMalformed() {
        #expect(parseEvent([0x04, 0x0E, 0x05, 0x01, 0x03, 0x0C, 0x00]) == nil)  // truncated
        #expect(parseEvent([0x04, 0x0E, 0x03, 0x01, 0x03, 0x0C, 0x00]) == nil)  // oversized
        #expect(parseEvent([0x04, 0x0E]) == nil)
        #expect(parseEvent([0x04]) == nil)
        #expect(parseEvent([0x04, 0x0F, 0x03, 0x00, 0x01, 0x0D]) == nil)  // Command Status one octet short
        #expect(parseEvent([0x04, 0x3E, 0x00]) == nil)  // LE Meta without a subevent
    }

    @Test func everyPrefixOfEveryVectorParsesOrIsRejectedWithoutTrapping() {
        let vectors: [[UInt8]] = [
            [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00],
            [
                0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0,
                0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00,
            ],
            [
                0x04, 0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x03,
                0x02, 0x01, 0x06, 0xC4,
            ],
            [0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00],
        ]
        for v in vectors {
            #expect(parseEvent(v) != nil)
            for n in 1..<v.count {
                // A prefix with its length octet patched to match is a truncated event body.
                var p = Array(v.prefix(n))
                if p.count >= 3 { p[2] = UInt8(p.count - 3) }
                _ = parseEvent(p)
            }
        }
    }

    @Test func pseudoRandomBytesNeverTrap() {
        var g = SplitMix64(seed: 0x5EED)
        for _ in 0..<20_000 {
            let n = Int(g.next() % 40)
            var bytes: [UInt8] = [0x04]
            for _ in 0..<n { bytes.append(UInt8(truncatingIfNeeded: g.next())) }
            if bytes.count > 2 {
                bytes[1] = [0x0E, 0x0F, 0x3E, 0x05, 0x13, 0x10][Int(g.next() % 6)]
                bytes[2] = UInt8(bytes.count - 3)
            }
            if bytes.count > 3, bytes[1] == 0x3E { bytes[3] = [0x01, 0x02, 0x03, 0x0A, 0x0D, 0x29][Int(g.next() % 6)] }
            _ = parseEvent(bytes)
        }
    }

    @Test func eventsFedOneByteAtATimeThroughTheDeframerParseTheSame() {
        let stream: [UInt8] =
            [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
            + [0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13]
            + [0x04, 0x10, 0x01, 0x00]
        var d = H4Deframer()
        var kinds: [String] = []
        for b in stream {
            d.append(CollectionOfOne(b))
            while let p = d.next() {
                switch HCIEvent.parse(p.payload[...]) {
                case .commandComplete?: kinds.append("cc")
                case .disconnectionComplete?: kinds.append("disc")
                case .hardwareError?: kinds.append("hw")
                default: kinds.append("?")
                }
            }
        }
        #expect(kinds == ["cc", "disc", "hw"])
    }
}

/// A small deterministic generator for the no-trap tests.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
