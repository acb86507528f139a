import BLEHCI
import BLETransport

/// How a simulated peripheral behaves once connected (the per-peripheral scenario keys).
public struct PeripheralLinkSpec: Sendable, Hashable {
    /// Seconds between notifications of each subscribed characteristic (and indications of each
    /// characteristic with indications enabled) — `notify_interval_ms`, default 1000.
    public var notifyInterval = 1.0
    /// `flood`: notifications as fast as the link carries them, `floodPerEvent` PDUs per
    /// subscribed characteristic in every connection event (for back-pressure tests).
    public var flood = false
    /// `request_connection_update`: right after connecting, the peer asks for new connection
    /// parameters with an L2CAP Connection Parameter Update Request.
    public var requestConnectionUpdate = false
    /// `security_request`: right after connecting, the peer sends an SMP Security Request.
    public var securityRequest = false
    /// `gatt_change_at_s`: at this virtual time the database grows by the Tx Power service and a
    /// Service Changed indication goes to a client that enabled it.
    public var gattChangeAt: Double?

    public init() {}

    /// PDUs per subscribed characteristic per connection event under `flood` (Vol 6, Part B,
    /// §4.5.6: a connection event carries several PDUs while both sides set More Data).
    public static let floodPerEvent = 4
}

/// The L2CAP fixed channels of an LE link (Core v5.4, Vol 3, Part A, §2.1, table 2.3).
public enum SimCID {
    public static let att: UInt16 = 0x0004
    public static let leSignalling: UInt16 = 0x0005
    public static let smp: UInt16 = 0x0006
}

/// The L2CAP LE signalling PDUs the simulated peer sends (Vol 3, Part A, §4): Code(1)
/// Identifier(1) Length(2) Data.
public enum SimSignalling {
    public static let commandReject: UInt8 = 0x01
    public static let connectionParameterUpdateRequest: UInt8 = 0x12
    public static let connectionParameterUpdateResponse: UInt8 = 0x13

    /// The identifier of the peer's one Connection Parameter Update Request.
    public static let updateIdentifier: UInt8 = 0x01
    /// What the peer asks for: 80–100 ms, Peripheral_Latency 4, 5 s supervision timeout.
    public static let requested = (
        intervalMin: UInt16(0x0040), intervalMax: UInt16(0x0050), latency: UInt16(4),
        timeoutMultiplier: UInt16(0x01F4)
    )

    /// §4.20 L2CAP_CONNECTION_PARAMETER_UPDATE_REQ: Code 0x12, Length 8, Interval_Min(2)
    /// Interval_Max(2) Latency(2) Timeout(2) (×1.25 ms, ×1.25 ms, events, ×10 ms).
    public static func updateRequestPDU() -> [UInt8] {
        var w = ByteWriter(capacity: 12)
        w.u8(connectionParameterUpdateRequest)
        w.u8(updateIdentifier)
        w.le16(8)
        w.le16(requested.intervalMin)
        w.le16(requested.intervalMax)
        w.le16(requested.latency)
        w.le16(requested.timeoutMultiplier)
        return w.bytes
    }

    /// §4.1 L2CAP_COMMAND_REJECT_RSP: Code 0x01, the request's Identifier, Length 2, Reason(2)
    /// 0x0000 "Command not understood".
    public static func commandNotUnderstood(identifier: UInt8) -> [UInt8] {
        [commandReject, identifier, 0x02, 0x00, 0x00, 0x00]
    }
}

/// The Security Manager PDUs the simulated peer uses (Vol 3, Part H, §3.5): Code(1) Data.
public enum SimSMP {
    public static let pairingRequest: UInt8 = 0x01
    public static let pairingFailed: UInt8 = 0x05
    public static let securityRequest: UInt8 = 0x0B
    /// §3.5.5 Pairing Failed reason 0x05 "Pairing Not Supported".
    public static let pairingNotSupported: UInt8 = 0x05

    /// §3.5.7 Security Request: Code 0x0B, AuthReq(1) = 0x01 (Bonding_Flags 0b01 "Bonding", no
    /// MITM, no Secure Connections).
    public static let securityRequestPDU: [UInt8] = [securityRequest, 0x01]
}

/// `gatt_silence`: peers that stop answering ATT requests while their links stay up.
struct GATTSilence: Sendable {
    var all = false
    var peers: Set<BDAddress> = []
    func covers(_ peer: BDAddress) -> Bool { all || peers.contains(peer) }
}

extension SimEvents {
    /// An HCI ACL Data packet (§5.4.2) carrying one whole L2CAP basic frame (Vol 3, Part A, §3.1:
    /// Length(2) Channel ID(2) Payload). Packet_Boundary_Flag 0b10: the first (here only) fragment
    /// of an automatically flushable packet.
    public static func l2capACL(handle: UInt16, cid: UInt16, _ pdu: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 9 + pdu.count)
        w.u8(0x02)
        w.le16(handle & 0x0FFF | 0x2000)
        w.le16(UInt16(4 + pdu.count))
        w.le16(UInt16(pdu.count))
        w.le16(cid)
        w.append(pdu)
        return w.bytes
    }

    /// The same on the ATT channel, CID 0x0004.
    public static func attACL(handle: UInt16, _ pdu: [UInt8]) -> [UInt8] {
        l2capACL(handle: handle, cid: SimCID.att, pdu)
    }
}

extension VirtualController {
    /// One host ACL packet for a live link. Vol 4, Part E, §5.4.2: Packet_Boundary_Flag 0b00 or 0b10
    /// starts an L2CAP PDU, 0b01 continues it — a host fragments a frame longer than the
    /// controller's LE_ACL_Data_Packet_Length. Fragments are collected per handle until the basic
    /// frame's Length (Vol 3, Part A, §3.1) is complete; then the frame goes to the peer's handler
    /// for its channel. Returns the peer's answers and whether the packet was understood.
    mutating func deliverToPeer(_ payload: [UInt8], now: Double, silence: GATTSilence = GATTSilence())
        -> (events: [[UInt8]], understood: Bool)
    {
        var c = ByteCursor(payload)
        guard let hf = c.readLE16(), let total = c.readLE16(), let data = c.readBytes(Int(total)) else {
            return ([], false)
        }
        let handle = hf & 0x0FFF
        guard connections[handle] != nil else { return ([], false) }
        var frame: [UInt8]
        switch (hf >> 12) & 0x3 {
        case 0b00, 0b10:
            // A start abandons an incomplete frame (the host flushed it).
            frame = Array(data)
        case 0b01:
            guard let partial = connections[handle]!.rxPartial else { return ([], false) }  // no start to continue
            frame = partial + data
        default:
            return ([], false)
        }
        connections[handle]!.rxPartial = nil
        var l2 = ByteCursor(frame)
        guard let len = l2.readLE16(), let cid = l2.readLE16() else {
            connections[handle]!.rxPartial = frame  // not even the basic header yet
            return ([], true)
        }
        if frame.count - 4 < Int(len) {
            connections[handle]!.rxPartial = frame
            return ([], true)
        }
        guard frame.count - 4 == Int(len) else { return ([], false) }  // more data than the frame says: malformed
        connections[handle]!.framesReceived += 1
        return peerReceive(handle: handle, cid: cid, Array(frame[4...]), now: now, silence: silence)
    }

    /// One complete L2CAP frame from the host, by channel.
    mutating func peerReceive(handle: UInt16, cid: UInt16, _ pdu: [UInt8], now: Double, silence: GATTSilence)
        -> (events: [[UInt8]], understood: Bool)
    {
        var link = connections[handle]!
        defer { connections[handle] = link }
        switch cid {
        case SimCID.att:
            guard let op = pdu.first else { return ([], false) }
            // A phone is the client here: the gateway's answers to its read (and a refusal may make it pair).
            if var phone = link.phone {
                link.attReceived.append(pdu)
                guard let request = phone.attReceived(pdu) else { return ([], true) }
                link.phone = phone
                return ([SimEvents.l2capACL(handle: handle, cid: SimCID.smp, request)], true)
            }
            // `gatt_silence`: requests (bit 6 clear, not a confirmation) go unanswered; the link stays up.
            if silence.covers(link.peer) && op & 0x40 == 0 && op != SimGATTServer.Op.confirmation {
                link.attRequestsIgnored += 1
                return ([], true)
            }
            var out: [[UInt8]] = []
            if let response = link.gatt.handle(request: pdu, now: now) {
                out.append(SimEvents.attACL(handle: handle, response))
            }
            // A confirmation (or anything else) may free the way for a queued indication.
            if link.lastHeard >= now - 0.5, let ind = link.gatt.nextIndication(at: now) {
                out.append(SimEvents.attACL(handle: handle, ind))
            }
            return (out, true)
        case SimCID.leSignalling:
            link.signallingReceived.append(pdu)
            var s = ByteCursor(pdu)
            guard let code = s.readU8(), let id = s.readU8(), let len = s.readLE16(), let data = s.readBytes(Int(len))
            else {
                return ([], false)
            }
            switch code {
            case SimSignalling.connectionParameterUpdateResponse:
                // §4.21: Result(2), 0x0000 accepted, 0x0001 rejected.
                var d = ByteCursor(data)
                if id == SimSignalling.updateIdentifier, let result = d.readLE16() {
                    link.connectionParameterUpdateResult = result
                }
                return ([], true)
            case SimSignalling.commandReject:
                return ([], true)
            default:
                // §4.1: a command the peer does not take is answered with Command Reject.
                return (
                    [
                        SimEvents.l2capACL(
                            handle: handle, cid: SimCID.leSignalling, SimSignalling.commandNotUnderstood(identifier: id)
                        )
                    ], true
                )
            }
        case SimCID.smp:
            link.smpReceived.append(pdu)
            if link.phone != nil {
                connections[handle] = link
                let out = phoneReceive(handle: handle, pdu) ?? []
                link = connections[handle]!
                return (out, true)
            }
            switch pdu.first {
            case SimSMP.pairingFailed:
                link.pairingFailedReason = pdu.count >= 2 ? pdu[1] : nil
                return ([], true)
            case SimSMP.pairingRequest:
                // The simulated peer cannot pair: Pairing Failed, Pairing Not Supported (§3.5.5).
                return (
                    [
                        SimEvents.l2capACL(
                            handle: handle, cid: SimCID.smp, [SimSMP.pairingFailed, SimSMP.pairingNotSupported])
                    ], true
                )
            default:
                return ([], true)
            }
        default:
            return ([], false)
        }
    }

    /// What the peer sends on its own as soon as the link is up (after Connection Complete).
    static func openingPDUs(handle: UInt16, _ spec: PeripheralLinkSpec) -> [[UInt8]] {
        var out: [[UInt8]] = []
        if spec.requestConnectionUpdate {
            out.append(
                SimEvents.l2capACL(
                    handle: handle, cid: SimCID.leSignalling, SimSignalling.updateRequestPDU()))
        }
        if spec.securityRequest {
            out.append(SimEvents.l2capACL(handle: handle, cid: SimCID.smp, SimSMP.securityRequestPDU))
        }
        return out
    }
}
