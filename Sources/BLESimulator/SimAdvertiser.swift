import BLEHCI
import BLETransport

/// What a host set up with the legacy advertising commands (Core v5.4, Vol 4, Part E, §7.8.5–§7.8.9), or with
/// the extended ones for the one advertising set this controller has (handle 0; §7.8.53–§7.8.56).
public struct SimAdvertising: Sendable, Hashable {
    /// Advertising_Type: 0x00 ADV_IND (connectable and scannable undirected) … 0x04.
    public var type: UInt8 = 0x00
    /// Own_Address_Type: 0x00 public, 0x01 the random address (LE Set Random Address).
    public var ownAddressType: UInt8 = 0x00
    public var data: [UInt8] = []
    public var scanResponse: [UInt8] = []
    public var enabled = false
    /// Times advertising was enabled (a phone's keys for a pairing are drawn from it).
    public var sessions: UInt64 = 0
    /// Extended commands: whether LE Set Extended Advertising Parameters created set 0, and whether it uses legacy
    /// PDUs (data at most 31 octets).
    public var setCreated = false
    public var legacyPDUs = true

    /// Whether a central may connect: enabled, ADV_IND.
    public var connectable: Bool { enabled && type == 0x00 }
}

extension SimCommandTable {
    /// The peripheral's commands: advertising, and the answer to LE Long Term Key Request.
    static let peripheralEntries: [(SimOpcode, SimCommandEntry)] =
        [
            // §7.8.5 HCI_LE_Set_Advertising_Parameters: Advertising_Interval_Min(2) Advertising_Interval_Max(2)
            // Advertising_Type(1) Own_Address_Type(1) Peer_Address_Type(1) Peer_Address(6) Advertising_Channel_Map(1)
            // Advertising_Filter_Policy(1). "If the Host issues this command when advertising is enabled, the
            // Controller shall return the error code Command Disallowed (0x0C)."
            entry(.leSetAdvertisingParameters, "LE Set Advertising Parameters", octet: 25, bit: 5) { c, p, op, _ in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let minI = p.readLE16(), let maxI = p.readLE16(), let type = p.readU8(), let own = p.readU8(),
                    p.readU8() != nil, BDAddress.read(from: &p) != nil, let map = p.readU8(), let policy = p.readU8(),
                    type <= 4, own <= 3, (1...7).contains(map), policy <= 3
                else { return complete(op, .invalidParameters) }
                // High duty cycle directed advertising (0x01) ignores the interval; the others take 0x0020…0x4000.
                if type != 0x01 {
                    guard (0x20...0x4000).contains(minI), (0x20...0x4000).contains(maxI), minI <= maxI else {
                        return complete(op, .invalidParameters)
                    }
                }
                guard !c.advertising.enabled else { return complete(op, .commandDisallowed) }
                c.advertising.type = type
                c.advertising.ownAddressType = own
                return complete(op)
            },
            // §7.8.7 HCI_LE_Set_Advertising_Data: Advertising_Data_Length(1) Advertising_Data(31).
            entry(.leSetAdvertisingData, "LE Set Advertising Data", octet: 25, bit: 7) { c, p, op, _ in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let n = p.readU8(), n <= 31, let d = p.readBytes(31) else {
                    return complete(op, .invalidParameters)
                }
                c.advertising.data = Array(d.prefix(Int(n)))
                return complete(op)
            },
            // §7.8.8 HCI_LE_Set_Scan_Response_Data: Scan_Response_Data_Length(1) Scan_Response_Data(31).
            entry(.leSetScanResponseData, "LE Set Scan Response Data", octet: 26, bit: 0) { c, p, op, _ in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let n = p.readU8(), n <= 31, let d = p.readBytes(31) else {
                    return complete(op, .invalidParameters)
                }
                c.advertising.scanResponse = Array(d.prefix(Int(n)))
                return complete(op)
            },
            // §7.8.9 HCI_LE_Set_Advertising_Enable: Advertising_Enable(1). A random Own_Address_Type with no random
            // address set is refused with Invalid HCI Command Parameters, as the specification requires.
            entry(.leSetAdvertisingEnable, "LE Set Advertising Enable", octet: 26, bit: 1) { c, p, op, _ in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let on = p.readU8(), on <= 1 else { return complete(op, .invalidParameters) }
                if on == 1 && c.advertising.ownAddressType & 0x01 == 1 && c.randomAddress == nil {
                    return complete(op, .invalidParameters)
                }
                if on == 1 && !c.advertising.enabled { c.advertising.sessions += 1 }
                c.advertising.enabled = on == 1
                return complete(op)
            },
            // §7.8.25 HCI_LE_Long_Term_Key_Request_Reply: Connection_Handle(2) Long_Term_Key(16) → Status
            // Connection_Handle(2). The link encrypts if the key is the central's (Encryption Change, §7.7.8); a key
            // that differs fails the first encrypted packet's MIC and the link ends (0x3D).
            entry(.leLongTermKeyRequestReply, "LE Long Term Key Request Reply", octet: 28, bit: 1) { c, p, op, _ in
                guard let h = p.readLE16(), let key = p.readBytes(16) else { return complete(op, .invalidParameters) }
                return c.answerKeyRequest(op, handle: h & 0x0FFF, key: Array(key.reversed()))
            },
            // §7.8.26 HCI_LE_Long_Term_Key_Request_Negative_Reply: Connection_Handle(2) → Status Connection_Handle(2).
            entry(.leLongTermKeyRequestNegativeReply, "LE Long Term Key Request Negative Reply", octet: 28, bit: 2) {
                c, p, op, _ in
                guard let h = p.readLE16() else { return complete(op, .invalidParameters) }
                return c.answerKeyRequest(op, handle: h & 0x0FFF, key: nil)
            },
        ] + extendedEntries

    /// The extended advertising commands for one advertising set, handle 0 (Core v5.4, Vol 4, Part E). A host that
    /// used them cannot use the legacy ones until a reset, and the other way round (§3.1.1), as with scanning.
    static let extendedEntries: [(SimOpcode, SimCommandEntry)] = [
        // §7.8.53 HCI_LE_Set_Extended_Advertising_Parameters [v1]: Advertising_Handle(1)
        // Advertising_Event_Properties(2) Primary_Advertising_Interval_Min(3) Primary_Advertising_Interval_Max(3)
        // Primary_Advertising_Channel_Map(1) Own_Address_Type(1) Peer_Address_Type(1) Peer_Address(6)
        // Advertising_Filter_Policy(1) Advertising_TX_Power(1) Primary_Advertising_PHY(1)
        // Secondary_Advertising_Max_Skip(1) Secondary_Advertising_PHY(1) Advertising_SID(1)
        // Scan_Request_Notification_Enable(1) → Status Selected_TX_Power(1).
        entry(.leSetExtendedAdvertisingParameters, "LE Set Extended Advertising Parameters", octet: 36, bit: 2) {
            c, p, op, _ in
            guard c.use(.extended) else { return complete(op, .commandDisallowed) }
            guard let handle = p.readU8(), let properties = p.readLE16(), let minI = p.readLE24(),
                let maxI = p.readLE24(), let map = p.readU8(), let own = p.readU8(), p.readU8() != nil,
                BDAddress.read(from: &p) != nil, let policy = p.readU8(), p.readU8() != nil, let phy = p.readU8(),
                p.readU8() != nil, p.readU8() != nil, let sid = p.readU8(), p.readU8() != nil,
                handle <= 0xEF, properties & ~0x7F == 0, (1...7).contains(map), own <= 3, policy <= 3, sid <= 0x0F,
                phy == 0x01 || phy == 0x03
            else { return complete(op, .invalidParameters) }
            guard let type = legacyType(properties: properties) else { return complete(op, .invalidParameters) }
            // High duty cycle directed advertising ignores the interval; the others take 0x000020 and up.
            if properties & 0x08 == 0 {
                guard minI >= 0x20, maxI >= 0x20, minI <= maxI else { return complete(op, .invalidParameters) }
            }
            // One advertising set: a second handle does not fit.
            guard handle == 0 else { return complete(op, .memoryCapacityExceeded) }
            guard !c.advertising.enabled else { return complete(op, .commandDisallowed) }
            c.advertising.type = type
            c.advertising.ownAddressType = own
            c.advertising.legacyPDUs = properties & 0x10 != 0
            c.advertising.setCreated = true
            // Selected_TX_Power: what the simulated radio sends at, 0 dBm.
            return complete(op, .success, [0x00])
        },
        // §7.8.54 HCI_LE_Set_Extended_Advertising_Data: Advertising_Handle(1) Operation(1) Fragment_Preference(1)
        // Advertising_Data_Length(1) Advertising_Data(length). Only Operation 0x03, complete data, is taken; with
        // legacy PDUs the data is at most 31 octets.
        entry(.leSetExtendedAdvertisingData, "LE Set Extended Advertising Data", octet: 36, bit: 3) { c, p, op, _ in
            guard c.use(.extended) else { return complete(op, .commandDisallowed) }
            guard let handle = p.readU8(), let operation = p.readU8(), let fragment = p.readU8(), let n = p.readU8(),
                let d = p.readBytes(Int(n)), handle <= 0xEF, operation <= 0x04, fragment <= 1
            else { return complete(op, .invalidParameters) }
            guard handle == 0, c.advertising.setCreated else { return complete(op, .unknownAdvertisingIdentifier) }
            guard operation == 0x03 else { return complete(op, .unsupportedFeature) }
            if c.advertising.legacyPDUs && n > 31 { return complete(op, .invalidParameters) }
            c.advertising.data = Array(d)
            return complete(op)
        },
        // §7.8.56 HCI_LE_Set_Extended_Advertising_Enable: Enable(1) Num_Sets(1), then per set Advertising_Handle(1)
        // Duration(2) Max_Extended_Advertising_Events(1). Disabling with Num_Sets 0 disables every set; enabling
        // needs at least one.
        entry(.leSetExtendedAdvertisingEnable, "LE Set Extended Advertising Enable", octet: 36, bit: 5) { c, p, op, _ in
            guard c.use(.extended) else { return complete(op, .commandDisallowed) }
            guard let on = p.readU8(), let sets = p.readU8(), on <= 1, on == 0 || sets > 0 else {
                return complete(op, .invalidParameters)
            }
            var handles: [UInt8] = []
            for _ in 0..<sets {
                guard let h = p.readU8(), p.readLE16() != nil, p.readU8() != nil else {
                    return complete(op, .invalidParameters)
                }
                handles.append(h)
            }
            guard handles.allSatisfy({ $0 == 0 }), handles.isEmpty || c.advertising.setCreated else {
                return complete(op, .unknownAdvertisingIdentifier)
            }
            if on == 1 && c.advertising.ownAddressType & 0x01 == 1 && c.randomAddress == nil {
                return complete(op, .invalidParameters)
            }
            if on == 1 && !c.advertising.enabled { c.advertising.sessions += 1 }
            c.advertising.enabled = on == 1
            return complete(op)
        },
    ]

    /// Advertising_Event_Properties as the legacy Advertising_Type it sends (Table 7.2), or nil for a combination the
    /// table forbids. Extended PDUs (bit 4 clear) are neither connectable and scannable at once nor anonymous when
    /// connectable; a connectable undirected extended set is treated here as ADV_IND's peer.
    static func legacyType(properties: UInt16) -> UInt8? {
        let connectable = properties & 0x01 != 0
        let scannable = properties & 0x02 != 0
        let directed = properties & 0x04 != 0
        if properties & 0x10 != 0 {
            switch properties & 0x0F {
            case 0x03: return 0x00  // ADV_IND
            case 0x0D: return 0x01  // ADV_DIRECT_IND, high duty cycle
            case 0x05: return 0x04  // ADV_DIRECT_IND, low duty cycle
            case 0x02: return 0x02  // ADV_SCAN_IND
            case 0x00: return 0x03  // ADV_NONCONN_IND
            default: return nil
            }
        }
        if connectable && scannable { return nil }
        if connectable && properties & 0x20 != 0 { return nil }
        if directed { return 0x04 }
        return connectable ? 0x00 : (scannable ? 0x02 : 0x03)
    }
}

extension VirtualController {
    /// The host answered the phone's LE Long Term Key Request; `key` most significant octet first, nil for the
    /// Negative Reply.
    mutating func answerKeyRequest(_ op: SimOpcode, handle: UInt16, key: [UInt8]?) -> [[UInt8]] {
        let echo = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        guard var link = connections[handle] else {
            return SimCommandTable.complete(op, .unknownConnection, echo)
        }
        var out = SimCommandTable.complete(op, .success, echo)
        guard var phone = link.phone else { return out }
        let (encrypted, smp) = phone.encryption(withKey: key)
        link.phone = phone
        connections[handle] = link
        if encrypted {
            // §7.7.8 Encryption Change: Status(1) Connection_Handle(2) Encryption_Enabled(1), 0x01 AES-CCM.
            if eventMask & (1 << 7) != 0 {
                out.append(SimEvents.event(SimEventCode.encryptionChange, [0x00] + echo + [0x01]))
            }
            out += smp.map { SimEvents.l2capACL(handle: handle, cid: SimCID.smp, $0) }
        } else {
            // The phone gives up: a wrong key fails the MIC; no key leaves it nothing to encrypt with.
            connections[handle] = nil
            endedPairings.append(phone)
            if eventMask & (1 << 4) != 0 {
                out.append(
                    SimEvents.disconnectionComplete(
                        handle: handle, reason: key == nil ? SimReason.remoteUserTerminated : SimReason.micFailure))
            }
        }
        return out
    }

    /// A phone heard our connectable advertising and connected (CONNECT_IND; Vol 6, Part B, §4.5): we are the
    /// peripheral. Legacy advertising stops with the connection (Vol 4, Part E, §7.8.9). The phone opens with its
    /// Pairing Request.
    mutating func acceptCentral(
        phone spec: PhoneSpec, identity: BDAddress, address: BDAddress, seed: [UInt8], now: Double
    ) -> [[UInt8]] {
        guard advertising.connectable, connections.count < maxConnections else { return [] }
        advertising.enabled = false
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let handle = nextHandle
        let own =
            advertising.ownAddressType & 0x01 == 1
            ? (0x01 as UInt8, randomAddress ?? self.address) : (0x00, self.address)
        // Phones ask for 30 ms, no latency, 5 s supervision timeout, and send nothing unprompted but SMP here.
        var link = SimConnection(
            handle: handle, peer: address, peerAddressType: 0x01, interval: 24, latency: 0, supervisionTimeout: 500,
            gatt: SimGATTServer(deviceName: "phone", phase: 0), lastHeard: now, nextNotification: .infinity)
        let pairing = SimPhonePairing(
            spec: spec, identity: identity, phoneAddress: address, gateway: own, seed: seed)
        link.phone = pairing
        link.radioAddress = identity
        connections[handle] = link
        var out = connectionCompleteEvent(
            status: .success, handle: handle, peerType: 0x01, peer: address, interval: 24, latency: 0, timeout: 500,
            role: SimRole.peripheral)
        // §7.7.65.18 LE Advertising Set Terminated, for a set the extended commands enabled: Status(1)
        // Advertising_Handle(1) Connection_Handle(2) Num_Completed_Extended_Advertising_Events(1).
        if commandSet == .extended, allowsLEMeta(subevent: SimEventCode.leAdvertisingSetTerminated) {
            out.append(
                SimEvents.event(
                    SimEventCode.leMeta,
                    [SimEventCode.leAdvertisingSetTerminated, 0x00, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0]))
        }
        let (cid, opening) = pairing.openingPDU
        return out + [SimEvents.l2capACL(handle: handle, cid: cid, opening)]
    }

    /// The phones' users type `passkey`: each phone waiting for one sends its first Passkey Entry Confirm. Typed
    /// before a phone asks (the test read the gateway's display before the phone had the gateway's public key), it
    /// is kept for the next phone that asks.
    mutating func typePasskey(_ passkey: UInt32) -> [[UInt8]] {
        let out: [[UInt8]] = connections.keys.sorted().compactMap { h in
            guard var phone = connections[h]?.phone, let confirm = phone.typed(passkey) else { return nil }
            connections[h]!.phone = phone
            return SimEvents.l2capACL(handle: h, cid: SimCID.smp, confirm)
        }
        typedAhead = out.isEmpty ? passkey : nil
        return out
    }

    /// An SMP command from the host on a phone's link: the phone's answers, and LE Long Term Key Request when
    /// the phone starts encryption (§7.7.65.5: Connection_Handle(2) Random_Number(8) Encrypted_Diversifier(2),
    /// both zero for an LE Secure Connections key).
    mutating func phoneReceive(handle: UInt16, _ pdu: [UInt8]) -> [[UInt8]]? {
        guard var phone = connections[handle]?.phone else { return nil }
        var output = phone.receive(pdu)
        if let passkey = typedAhead, let confirm = phone.typed(passkey) {
            typedAhead = nil
            output.smp.append(confirm)
        }
        connections[handle]!.phone = phone
        var out = output.smp.map { SimEvents.l2capACL(handle: handle, cid: SimCID.smp, $0) }
        if output.startEncryption, allowsLEMeta(subevent: SimEventCode.leLongTermKeyRequest) {
            var w = ByteWriter(capacity: 13)
            w.u8(SimEventCode.leLongTermKeyRequest)
            w.le16(handle)
            w.le64(0)
            w.le16(0)
            out.append(SimEvents.event(SimEventCode.leMeta, w.bytes))
        }
        return out
    }
}
