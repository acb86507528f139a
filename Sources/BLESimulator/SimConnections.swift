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
    /// How the peer behaves (the scenario's per-peripheral keys).
    public var behaviour = PeripheralLinkSpec()
    /// An L2CAP frame whose continuation fragments (PB 0b01) are still to come.
    var rxPartial: [UInt8]?
    /// Complete L2CAP frames the peer received from the host (any channel).
    public var framesReceived = 0
    /// The host's L2CAP LE signalling PDUs (CID 0x0005) and SMP PDUs (CID 0x0006), as received.
    public var signallingReceived: [[UInt8]] = []
    public var smpReceived: [[UInt8]] = []
    /// ATT PDUs from the host on a phone's link (the phone is the client there).
    public var attReceived: [[UInt8]] = []
    /// A phone that connected to us as central (we are the peripheral), and its pairing.
    public var phone: SimPhonePairing?
    /// The emitter's own address behind `peer` (a phone's identity), for the radio to find it after the phone's
    /// address has changed.
    var radioAddress: BDAddress?
    /// Result of the host's Connection Parameter Update Response (0 accepted, 1 rejected).
    public var connectionParameterUpdateResult: UInt16?
    /// Reason of the host's Pairing Failed, after a Security Request.
    public var pairingFailedReason: UInt8?
    /// ATT requests left unanswered under `gatt_silence`.
    public var attRequestsIgnored = 0
    /// Notifications handed to the host on this link (a host too slow to read loses whole batches, counted in
    /// `GatewayStats.notificationsDropped` instead).
    public var notificationsSent = 0
}

/// One entry of the Filter Accept List (Vol 4, Part E, §7.8.16): Address_Type 0x00 public,
/// 0x01 random, 0xFF anonymous advertisements.
public struct SimAcceptListEntry: Sendable, Hashable {
    public var addressType: UInt8
    public var address: BDAddress
    public init(addressType: UInt8, address: BDAddress) { (self.addressType, self.address) = (addressType, address) }
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
    /// Initiator_Filter_Policy 1: the Filter Accept List at the time of the command; `peer` is ignored.
    public var acceptList: Set<SimAcceptListEntry>?

    /// Whether an advertiser with this address is one to connect to.
    public func targets(_ address: BDAddress, type: UInt8) -> Bool {
        guard let acceptList else { return address == peer }
        return acceptList.contains(SimAcceptListEntry(addressType: type, address: address))
    }
}

extension SimEvents {
    /// HCI_LE_Connection_Complete (§7.7.65.1): Subevent 0x01 Status(1) Connection_Handle(2) Role(1)
    /// Peer_Address_Type(1) Peer_Address(6) Connection_Interval(2) Peripheral_Latency(2)
    /// Supervision_Timeout(2) Central_Clock_Accuracy(1).
    public static func leConnectionComplete(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16, role: UInt8 = SimRole.central
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 19)
        w.u8(0x01)
        w.u8(status.rawValue)
        w.le16(handle)
        w.u8(role)
        w.u8(peerType)
        peer.write(to: &w)
        w.le16(interval)
        w.le16(latency)
        w.le16(timeout)
        w.u8(0x00)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_LE_Enhanced_Connection_Complete [v1] (§7.7.65.10): as LE Connection Complete with
    /// Local_Resolvable_Private_Address(6) and Peer_Resolvable_Private_Address(6) (zero: no privacy)
    /// after the peer address.
    public static func leEnhancedConnectionComplete(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16, role: UInt8 = SimRole.central
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 31)
        w.u8(0x0A)
        w.u8(status.rawValue)
        w.le16(handle)
        w.u8(role)
        w.u8(peerType)
        peer.write(to: &w)
        w.append(repeatElement(0, count: 12))
        w.le16(interval)
        w.le16(latency)
        w.le16(timeout)
        w.u8(0x00)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_LE_Connection_Update_Complete (§7.7.65.3): Subevent 0x03 Status(1) Connection_Handle(2)
    /// Connection_Interval(2) Peripheral_Latency(2) Supervision_Timeout(2).
    public static func leConnectionUpdateComplete(handle: UInt16, interval: UInt16, latency: UInt16, timeout: UInt16)
        -> [UInt8]
    {
        var w = ByteWriter(capacity: 10)
        w.u8(0x03)
        w.u8(0)
        w.le16(handle)
        w.le16(interval)
        w.le16(latency)
        w.le16(timeout)
        return event(SimEventCode.leMeta, w.bytes)
    }

    /// HCI_Disconnection_Complete (§7.7.5): Status(1) Connection_Handle(2) Reason(1).
    public static func disconnectionComplete(handle: UInt16, reason: UInt8) -> [UInt8] {
        var w = ByteWriter(capacity: 4)
        w.u8(0)
        w.le16(handle)
        w.u8(reason)
        return event(0x05, w.bytes)
    }

    /// HCI_Number_Of_Completed_Packets (§7.7.19): Num_Handles(1) then Connection_Handle(2) Num_Completed_Packets(2).
    public static func numberOfCompletedPackets(handle: UInt16, count: UInt16) -> [UInt8] {
        var w = ByteWriter(capacity: 5)
        w.u8(1)
        w.le16(handle)
        w.le16(count)
        return event(0x13, w.bytes)
    }
}

/// LE Connection Complete's Role (§7.7.65.1).
public enum SimRole {
    public static let central: UInt8 = 0x00
    public static let peripheral: UInt8 = 0x01
}

/// HCI reason codes used on disconnection (Vol 1, Part F).
public enum SimReason {
    /// 0x3D Connection Terminated due to MIC Failure: the two sides encrypted with different keys.
    public static let micFailure: UInt8 = 0x3D
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
    /// With a `behaviour` that asks for it, the peer's own opening PDUs (L2CAP Connection
    /// Parameter Update Request, SMP Security Request) follow the Connection Complete.
    mutating func establish(
        peer: BDAddress, addressType: UInt8, deviceName: String, phase: Double, behaviour: PeripheralLinkSpec,
        now: Double
    ) -> [[UInt8]] {
        guard let p = pendingConnection else { return [] }
        pendingConnection = nil
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let handle = nextHandle
        let grown = behaviour.gattChangeAt.map { now >= $0 } ?? false
        var link = SimConnection(
            handle: handle, peer: peer, peerAddressType: addressType, interval: p.interval, latency: p.latency,
            supervisionTimeout: p.supervisionTimeout,
            gatt: SimGATTServer(deviceName: deviceName, phase: phase, grown: grown),
            lastHeard: now,
            nextNotification: now + (behaviour.flood ? Double(p.interval) * 0.00125 : behaviour.notifyInterval))
        link.behaviour = behaviour
        connections[handle] = link
        return connectionCompleteEvent(
            status: .success, handle: handle, peerType: addressType, peer: peer, interval: p.interval,
            latency: p.latency, timeout: p.supervisionTimeout) + Self.openingPDUs(handle: handle, behaviour)
    }

    /// LE Enhanced Connection Complete if the host unmasked it (§7.7.65.10: "If this event is
    /// unmasked and the HCI_LE_Connection_Complete event is unmasked, only this event is
    /// generated"), else LE Connection Complete if unmasked, else nothing.
    func connectionCompleteEvent(
        status: SimStatus, handle: UInt16, peerType: UInt8, peer: BDAddress, interval: UInt16, latency: UInt16,
        timeout: UInt16, role: UInt8 = SimRole.central
    ) -> [[UInt8]] {
        if allowsLEMeta(subevent: 0x0A) {
            return [
                SimEvents.leEnhancedConnectionComplete(
                    status: status, handle: handle, peerType: peerType, peer: peer, interval: interval,
                    latency: latency, timeout: timeout, role: role)
            ]
        }
        if allowsLEMeta(subevent: 0x01) {
            return [
                SimEvents.leConnectionComplete(
                    status: status, handle: handle, peerType: peerType, peer: peer, interval: interval,
                    latency: latency, timeout: timeout, role: role)
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
        // Initiator_Filter_Policy (§7.8.12): 0x00 the peer given, 0x01 any device on the Filter Accept List.
        guard policy <= 1 else { return .invalidParameters }
        guard pendingConnection == nil else { return .commandDisallowed }
        if policy == 0 {
            guard !connections.values.contains(where: { $0.peer == peer }) else { return .aclConnectionExists }
        }
        // Vol 1, Part F, §2.9 Connection Limit Exceeded (0x09): "the Controller has already reached
        // the limit to the number of connections that can be achieved to a device" (`max_connections`).
        guard connections.count < maxConnections else { return .connectionLimitExceeded }
        pendingConnection = PendingConnection(
            peer: peer, peerAddressType: peerType, interval: maxI, latency: latency, supervisionTimeout: timeout,
            acceptList: policy == 1 ? acceptList : nil)
        return .success
    }

    /// One ACL packet from the host. Returns the controller's events and the peer's answers, whether
    /// the packet was for a link's fixed channel, and whether it overflowed the controller's buffers.
    /// With `holdCredits` (`buffer_exhaustion`) the packet stays in an LE ACL buffer: no credit
    /// goes back, and the peer sees it only when `releaseACL` runs.
    mutating func handleACL(
        _ payload: [UInt8], now: Double, holdCredits: Bool = false, silence: GATTSilence = GATTSilence()
    ) -> (events: [[UInt8]], understood: Bool, overflow: Bool) {
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
        let (answers, understood) = deliverToPeer(payload, now: now, silence: silence)
        out += answers
        return (out, understood, false)
    }

    /// Drops every link without telling the host (power loss, reset).
    mutating func dropConnections() {
        connections.removeAll()
        pendingConnection = nil
    }
}
