import BLEHCI
import BLETransport

/// An L2CAP signaling command code (Core v5.4, Vol 3, Part A, §4, Table 4.2). An open set.
public struct L2CAPSignalingCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let commandReject = L2CAPSignalingCode(rawValue: 0x01)
    public static let disconnectionRequest = L2CAPSignalingCode(rawValue: 0x06)
    public static let disconnectionResponse = L2CAPSignalingCode(rawValue: 0x07)
    public static let connectionParameterUpdateRequest = L2CAPSignalingCode(rawValue: 0x12)
    public static let connectionParameterUpdateResponse = L2CAPSignalingCode(rawValue: 0x13)
    public static let leCreditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x14)
    public static let leCreditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x15)
    public static let flowControlCreditIndication = L2CAPSignalingCode(rawValue: 0x16)
    public static let creditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x18)
    public static let creditBasedReconfigureResponse = L2CAPSignalingCode(rawValue: 0x1A)

    /// Responses and indications: they answer a request of ours (we send none) or need no answer, so an
    /// unsolicited one is ignored rather than rejected (a Command Reject answers only requests).
    static let needsNoAnswer: Set<L2CAPSignalingCode> = [
        .commandReject, .disconnectionResponse, .connectionParameterUpdateResponse, .leCreditBasedConnectionResponse,
        .flowControlCreditIndication, .creditBasedConnectionResponse, .creditBasedReconfigureResponse,
    ]

    public var description: String {
        let name: String? =
            switch self {
            case .commandReject: "Command Reject"
            case .connectionParameterUpdateRequest: "Connection Parameter Update Request"
            case .connectionParameterUpdateResponse: "Connection Parameter Update Response"
            default: nil
            }
        let hex = "0x" + upperHex(rawValue, digits: 2)
        return name.map { "\(hex) \($0)" } ?? hex
    }
}

/// The LE signaling channel (CID 0x0005, Vol 3, Part A, §4) of one host acting as central, with no I/O:
/// `receive` takes a C-frame's payload and returns what to do.
///
/// Every command is Code (1) | Identifier (1) | Length (2) | Data (§4); on LE-U a C-frame carries one command
/// (§4: "only one command per C-frame"). Handled:
/// - Connection Parameter Update Request (§4.20): answered with Connection Parameter Update Response (§4.21),
///   result 0x0000 accepted when the parameters are in range, and then the controller is asked to apply them with
///   HCI LE Connection Update (Vol 4, Part E, §7.8.18); result 0x0001 rejected otherwise.
/// - Disconnection Request (§4.6): this host opens no connection-oriented channel, so every CID named is unknown:
///   Command Reject reason 0x0002 Invalid CID in request, with the request's DCID and SCID as the endpoints.
/// - A command longer than the LE signaling MTU (MTU_sig 23, §4): Command Reject reason 0x0001 Signaling MTU
///   exceeded, with our MTU.
/// - Any other request: Command Reject (§4.1) reason 0x0000 Command not understood.
/// - Responses and indications (we send no requests): ignored, counted.
public struct L2CAPLESignaling: Sendable {
    public enum Action: Sendable, Hashable {
        /// A signaling command to send on CID 0x0005.
        case reply([UInt8])
        /// Ask the controller for these connection parameters (LE Connection Update).
        case updateConnection(LEConnectionParameters)
    }

    public struct Counters: Sendable, Hashable {
        public var parameterUpdatesAccepted = 0
        public var parameterUpdatesRejected = 0
        public var commandsRejected = 0
        public var responsesIgnored = 0
        /// Frames too short for the header, with identifier 0x00 (§4: "an illegal identifier"), or whose
        /// Length disagrees with the frame.
        public var malformed = 0
        public init() {}
    }

    /// Command Reject reasons (§4.1, Table 4.3).
    public enum RejectReason {
        public static let commandNotUnderstood: UInt16 = 0x0000
        /// Data: Actual MTU (2).
        public static let signalingMTUExceeded: UInt16 = 0x0001
        /// Data: Local Endpoint (2), Remote Endpoint (2).
        public static let invalidCID: UInt16 = 0x0002
    }

    /// MTU_sig on LE-U: the largest command this host takes (§4, the LE minimum; we accept no more).
    public static let signalingMTU = 23

    /// Connection Parameter Update Response results (§4.21).
    public enum UpdateResult {
        public static let accepted: UInt16 = 0x0000
        public static let rejected: UInt16 = 0x0001
    }

    public private(set) var counters = Counters()

    public init() {}

    public mutating func receive(_ payload: [UInt8]) -> [Action] {
        var c = ByteCursor(payload)
        guard let raw = c.readU8(), let identifier = c.readU8(), let length = c.readLE16(), identifier != 0 else {
            counters.malformed += 1
            return []
        }
        let code = L2CAPSignalingCode(rawValue: raw)
        if L2CAPSignalingCode.needsNoAnswer.contains(code) {
            counters.responsesIgnored += 1
            return []
        }
        guard payload.count <= Self.signalingMTU else {
            counters.commandsRejected += 1
            var mtu = ByteWriter(capacity: 2)
            mtu.le16(UInt16(Self.signalingMTU))
            return [
                .reply(
                    Self.commandReject(
                        identifier: identifier, reason: RejectReason.signalingMTUExceeded, data: mtu.bytes))
            ]
        }
        guard let data = c.readBytes(Int(length)), c.isAtEnd else {
            counters.malformed += 1
            return [.reply(Self.commandReject(identifier: identifier, reason: RejectReason.commandNotUnderstood))]
        }
        switch code {
        case .connectionParameterUpdateRequest:
            return parameterUpdate(identifier: identifier, data)
        case .disconnectionRequest where data.count == 4:
            // §4.6 data: Destination CID (2) — ours —, Source CID (2) — the peer's.
            counters.commandsRejected += 1
            return [
                .reply(
                    Self.commandReject(
                        identifier: identifier, reason: RejectReason.invalidCID, data: Array(data)))
            ]
        default:
            counters.commandsRejected += 1
            return [.reply(Self.commandReject(identifier: identifier, reason: RejectReason.commandNotUnderstood))]
        }
    }

    /// §4.20 Connection Parameter Update Request data: Interval Min (2), Interval Max (2), Latency (2),
    /// Timeout (2), in the units of HCI LE Connection Update (1.25 ms, events, 10 ms).
    private mutating func parameterUpdate(identifier: UInt8, _ data: ArraySlice<UInt8>) -> [Action] {
        var c = ByteCursor(data)
        guard let iMin = c.readLE16(), let iMax = c.readLE16(), let latency = c.readLE16(), let timeout = c.readLE16(),
            c.isAtEnd
        else {
            counters.malformed += 1
            return [.reply(Self.commandReject(identifier: identifier, reason: RejectReason.commandNotUnderstood))]
        }
        let p = LEConnectionParameters(
            intervalMin: iMin, intervalMax: iMax, maxLatency: latency, supervisionTimeout: timeout)
        guard Self.inRange(p) else {
            counters.parameterUpdatesRejected += 1
            return [.reply(Self.updateResponse(identifier: identifier, result: UpdateResult.rejected))]
        }
        counters.parameterUpdatesAccepted += 1
        return [
            .reply(Self.updateResponse(identifier: identifier, result: UpdateResult.accepted)),
            .updateConnection(p),
        ]
    }

    /// The ranges of §4.20 (the same as HCI LE Connection Update, Vol 4, Part E, §7.8.18): interval 6…3200 with
    /// min ≤ max, latency 0…499, timeout 10…3200; and §7.8.18's rule that the supervision timeout in ms exceed
    /// (1 + latency) × interval max × 2, i.e. timeout × 10 > (1 + latency) × max × 1.25 × 2.
    public static func inRange(_ p: LEConnectionParameters) -> Bool {
        let intervals: ClosedRange<UInt16> = 0x0006...0x0C80
        guard intervals.contains(p.intervalMin), intervals.contains(p.intervalMax), p.intervalMin <= p.intervalMax,
            p.maxLatency <= 0x01F3, (0x000A...0x0C80).contains(p.supervisionTimeout)
        else { return false }
        return Int(p.supervisionTimeout) * 4 > (1 + Int(p.maxLatency)) * Int(p.intervalMax)
    }

    /// §4.1 Command Reject: Code 0x01, the request's Identifier, Length, Reason (2), Data (0, 2 or 4 octets by
    /// reason).
    static func commandReject(identifier: UInt8, reason: UInt16, data: [UInt8] = []) -> [UInt8] {
        var w = ByteWriter(capacity: 6 + data.count)
        w.u8(L2CAPSignalingCode.commandReject.rawValue)
        w.u8(identifier)
        w.le16(UInt16(2 + data.count))
        w.le16(reason)
        w.append(data)
        return w.bytes
    }

    /// §4.21 Connection Parameter Update Response: Code 0x13, the request's Identifier, Length 2, Result (2).
    static func updateResponse(identifier: UInt8, result: UInt16) -> [UInt8] {
        var w = ByteWriter(capacity: 6)
        w.u8(L2CAPSignalingCode.connectionParameterUpdateResponse.rawValue)
        w.u8(identifier)
        w.le16(2)
        w.le16(result)
        return w.bytes
    }
}
