import BLEHCI
import BLETransport
import Foundation

/// One LE connection the virtual controller holds as central, with the peer's GATT server.
public struct SimConnection: Sendable {
    public var handle: UInt16
    public var peer: BDAddress
    public var peerAddressType: UInt8
    /// Connection_Interval (×1.25 ms), Peripheral_Latency, Supervision_Timeout (×10 ms), as granted.
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
    public var gatt: SimGATTServer
    public var rssi: Int8 = 127
    /// Virtual time the peer was last in range; the link drops after Supervision_Timeout without it.
    public var lastHeard: Double
    public var nextNotification: Double
}

/// What the host asked for with LE Create Connection and has not yet got.
public struct PendingConnection: Sendable {
    public var peer: BDAddress
    public var peerAddressType: UInt8
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
    /// Set once CONNECT_IND went out under a `connection_failure` fault: the virtual time at which
    /// the controller gives up and reports 0x3E. The radio no longer looks for the peer meanwhile.
    public var failsAt: Double?
}

extension SimEvents {
    /// HCI_LE_Connection_Complete (§7.7.65.1): Subevent 0x01 Status(1) Connection_Handle(2) Role(1)
    /// Peer_Address_Type(1) Peer_Address(6) Connection_Interval(2) Peripheral_Latency(2)
    /// Supervision_Timeout(2) Central_Clock_Accuracy(1).
    public static func leConnectionComplete(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 19)
        w.u8(0x01); w.u8(status.rawValue); w.le16(handle); w.u8(0x00)  // Role: Central
        w.u8(peerType); peer.write(to: &w)
        w.le16(interval); w.le16(latency); w.le16(timeout); w.u8(0x00)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_LE_Enhanced_Connection_Complete [v1] (§7.7.65.10): as LE Connection Complete with
    /// Local_Resolvable_Private_Address(6) and Peer_Resolvable_Private_Address(6) (zero: no privacy)
    /// after the peer address.
    public static func leEnhancedConnectionComplete(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 31)
        w.u8(0x0A); w.u8(status.rawValue); w.le16(handle); w.u8(0x00)
        w.u8(peerType); peer.write(to: &w)
        w.append(repeatElement(0, count: 12))
        w.le16(interval); w.le16(latency); w.le16(timeout); w.u8(0x00)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_LE_Connection_Update_Complete (§7.7.65.3): Subevent 0x03 Status(1) Connection_Handle(2)
    /// Connection_Interval(2) Peripheral_Latency(2) Supervision_Timeout(2).
    public static func leConnectionUpdateComplete(handle: UInt16, interval: UInt16, latency: UInt16, timeout: UInt16)
        -> [UInt8]
    {
        var w = ByteWriter(capacity: 10)
        w.u8(0x03); w.u8(0); w.le16(handle); w.le16(interval); w.le16(latency); w.le16(timeout)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_Disconnection_Complete (§7.7.5): Status(1) Connection_Handle(2) Reason(1).
    public static func disconnectionComplete(handle: UInt16, reason: UInt8) -> [UInt8] {
        var w = ByteWriter(capacity: 4)
        w.u8(0); w.le16(handle); w.u8(reason)
        return event(0x05, w.bytes)
    }

    /// HCI_Number_Of_Completed_Packets (§7.7.19): Num_Handles(1) then Connection_Handle(2) Num_Completed_Packets(2).
    public static func numberOfCompletedPackets(handle: UInt16, count: UInt16) -> [UInt8] {
        var w = ByteWriter(capacity: 5)
        w.u8(1); w.le16(handle); w.le16(count)
        return event(0x13, w.bytes)
    }

    /// An HCI ACL Data packet (§5.4.2) carrying one whole L2CAP basic frame on the ATT channel
    /// (Vol 3, Part A, §3.1: Length(2) Channel ID(2)=0x0004 Payload). Packet_Boundary_Flag 0b10:
    /// the first (here only) fragment of an automatically flushable packet.
    public static func attACL(handle: UInt16, _ pdu: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 9 + pdu.count)
        w.u8(0x02); w.le16(handle & 0x0FFF | 0x2000); w.le16(UInt16(4 + pdu.count))
        w.le16(UInt16(pdu.count)); w.le16(0x0004); w.append(pdu)
        return w.bytes
    }
}

/// HCI reason codes used on disconnection (Vol 1, Part F).
public enum SimReason {
    public static let unknownConnectionIdentifier: UInt8 = 0x02
    public static let connectionTimeout: UInt8 = 0x08
    public static let aclConnectionAlreadyExists: UInt8 = 0x0B
    public static let unsupportedFeature: UInt8 = 0x11
    public static let remoteUserTerminated: UInt8 = 0x13
    public static let localHostTerminated: UInt8 = 0x16
}

extension VirtualController {
    /// The peer was heard advertising connectably while a connection to it was pending: the link
    /// is up. Returns the events for the host (LE Connection Complete, if its mask allows).
    mutating func establish(deviceName: String, phase: Double, now: Double) -> [[UInt8]] {
        guard let p = pendingConnection else { return [] }
        pendingConnection = nil
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let handle = nextHandle
        connections[handle] = SimConnection(
            handle: handle, peer: p.peer, peerAddressType: p.peerAddressType, interval: p.interval, latency: p.latency,
            supervisionTimeout: p.supervisionTimeout, gatt: SimGATTServer(deviceName: deviceName, phase: phase),
            lastHeard: now, nextNotification: now + 1)
        return connectionCompleteEvent(
            status: .success, handle: handle, peerType: p.peerAddressType, peer: p.peer, interval: p.interval,
            latency: p.latency, timeout: p.supervisionTimeout)
    }

    /// LE Enhanced Connection Complete if the host unmasked it (§7.7.65.10: "If this event is
    /// unmasked and the HCI_LE_Connection_Complete event is unmasked, only this event is
    /// generated"), else LE Connection Complete if unmasked, else nothing.
    func connectionCompleteEvent(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16
    ) -> [[UInt8]] {
        if allowsLEMeta(subevent: 0x0A) {
            return [
                SimEvents.leEnhancedConnectionComplete(
                    status: status, handle: handle, peerType: peerType, peer: peer, interval: interval, latency: latency,
                    timeout: timeout)
            ]
        }
        if allowsLEMeta(subevent: 0x01) {
            return [
                SimEvents.leConnectionComplete(
                    status: status, handle: handle, peerType: peerType, peer: peer, interval: interval, latency: latency,
                    timeout: timeout)
            ]
        }
        return []
    }

    /// The peer was heard and CONNECT_IND sent, but (`connection_failure`) no connection event
    /// will succeed. Vol 6, Part B, §4.5.2: when the link is not established within six
    /// connection intervals the Link Layer gives up; the host then hears status 0x3E.
    mutating func startFailingConnection(now: Double) {
        guard let p = pendingConnection, p.failsAt == nil else { return }
        pendingConnection!.failsAt = now + 6 * Double(p.interval) * 0.00125
    }

    /// Once its deadline has passed, ends a failing attempt with LE (Enhanced) Connection Complete
    /// status 0x3E Connection Failed to be Established (§7.7.65.1); no handle is allocated.
    mutating func failDueConnection(now: Double) -> (failed: Bool, events: [[UInt8]]) {
        guard let p = pendingConnection, let due = p.failsAt, now >= due else { return (false, []) }
        pendingConnection = nil
        return (
            true,
            connectionCompleteEvent(
                status: .connectionFailedToBeEstablished, handle: 0, peerType: p.peerAddressType, peer: p.peer,
                interval: 0, latency: 0, timeout: 0)
        )
    }

    /// Checks and records a connection request shared by the legacy and extended commands.
    mutating func requestConnection(
        policy: UInt8, peerType: UInt8, peer: BDAddress, minI: UInt16, maxI: UInt16, latency: UInt16, timeout: UInt16
    ) -> SimStatus {
        guard peerType <= 3, (6...0x0C80).contains(minI), (6...0x0C80).contains(maxI), minI <= maxI, latency <= 0x01F3,
            (0x0A...0x0C80).contains(timeout)
        else { return .invalidParameters }
        // The Filter Accept List is not simulated.
        guard policy == 0 else { return .unsupportedFeature }
        guard pendingConnection == nil else { return .commandDisallowed }
        guard !connections.values.contains(where: { $0.peer == peer }) else { return .aclConnectionExists }
        pendingConnection = PendingConnection(
            peer: peer, peerAddressType: peerType, interval: maxI, latency: latency, supervisionTimeout: timeout)
        return .success
    }

    /// One ACL packet from the host. Returns the controller's events and the peer's answers, whether
    /// the packet was for a link's ATT channel, and whether it overflowed the controller's buffers.
    /// With `holdCredits` (`buffer_exhaustion`) the packet stays in an LE ACL buffer: no credit
    /// goes back, and the peer sees it only when `releaseACL` runs.
    mutating func handleACL(_ payload: [UInt8], now: Double, holdCredits: Bool = false)
        -> (events: [[UInt8]], understood: Bool, overflow: Bool)
    {
        var c = ByteCursor(payload)
        guard let hf = c.readLE16(), let total = c.readLE16(), c.readBytes(Int(total)) != nil else {
            return ([], false, false)
        }
        let handle = hf & 0x0FFF
        guard connections[handle] != nil else { return ([], false, false) }
        if holdCredits {
            // Vol 4, Part E, §4.1.1: the host may not send more than Total_Num_LE_ACL_Data_Packets
            // without credits back. One more has nowhere to go: a real controller may drop it.
            guard buffersInUse < Self.leACLBuffers else { return ([], true, true) }
            heldACL.append(payload)
            return ([], true, false)
        }
        // The packet has "left" the controller's buffer: credit it back at once.
        var out = [SimEvents.numberOfCompletedPackets(handle: handle, count: 1)]
        let (answers, understood) = deliverToPeer(payload, now: now)
        out += answers
        return (out, understood, false)
    }

    /// Hands one host ACL packet (already checked to be for a live link) to the peer's GATT server.
    mutating func deliverToPeer(_ payload: [UInt8], now: Double) -> (events: [[UInt8]], understood: Bool) {
        var c = ByteCursor(payload)
        guard let hf = c.readLE16(), let total = c.readLE16(), let data = c.readBytes(Int(total)) else { return ([], false) }
        let handle = hf & 0x0FFF
        guard connections[handle] != nil else { return ([], false) }
        var l2 = ByteCursor(data)
        // Continuation fragments (PB 0b01) are not reassembled: ATT PDUs fit one packet at MTU ≤ 247.
        guard (hf >> 12) & 0x3 != 0x1, let len = l2.readLE16(), let cid = l2.readLE16(), let pdu = l2.readBytes(Int(len)),
            cid == 0x0004
        else { return ([], false) }
        guard let response = connections[handle]!.gatt.handle(request: Array(pdu), now: now) else { return ([], true) }
        return ([SimEvents.attACL(handle: handle, response)], true)
    }

    /// Drops every link without telling the host (power loss, reset).
    mutating func dropConnections() {
        connections.removeAll()
        pendingConnection = nil
    }
}
