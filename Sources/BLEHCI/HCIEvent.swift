import BLETransport

/// An HCI event packet, parsed (Core v5.4, Vol 4, Part E, §5.4.4: Event_Code (1),
/// Parameter_Total_Length (1), Event_Parameters).
///
/// Variable parts stay slices of the packet's bytes. Advertising reports are validated here but
/// delivered as their parameters, to be walked without allocating by `LEAdvertisingReport.parseLegacy`
/// and `parseExtended`. Events this type does not model are kept with their bytes.
public enum HCIEvent: Sendable {
    case commandComplete(CommandComplete)
    case commandStatus(CommandStatus)
    case disconnectionComplete(DisconnectionComplete)
    case encryptionChange(EncryptionChange)
    /// §7.7.16 Hardware Error: Hardware_Code (1), vendor-defined. The controller needs a reset.
    case hardwareError(code: UInt8)
    case numberOfCompletedPackets([CompletedPackets])
    /// LE Advertising Report parameters after the subevent code; known to parse.
    case leAdvertisingReport(ArraySlice<UInt8>)
    /// LE Extended Advertising Report parameters after the subevent code; known to parse.
    case leExtendedAdvertisingReport(ArraySlice<UInt8>)
    /// LE Connection Complete, LE Enhanced Connection Complete [v1] or [v2].
    case leConnectionComplete(LEConnectionComplete)
    case leConnectionUpdateComplete(LEConnectionUpdateComplete)
    /// §7.7.65.6 LE Remote Connection Parameter Request: the peer asks for new parameters over the link layer, and
    /// the controller waits for the host's Reply or Negative Reply.
    case leRemoteConnectionParameterRequest(handle: UInt16, parameters: LEConnectionParameters)
    /// §7.7.65.5 LE Long Term Key Request: the central starts encryption and the controller, as the peripheral,
    /// asks the host for the key. LE Secure Connections keys come with Random_Number and EDIV zero.
    case leLongTermKeyRequest(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16)
    /// An LE Meta subevent not modelled here, with its parameters after the subevent code.
    case leMeta(LEMetaSubevent, ArraySlice<UInt8>)
    /// An event not modelled here, with its parameters.
    case other(HCIEventCode, ArraySlice<UInt8>)

    /// §7.7.14 Command Complete: Num_HCI_Command_Packets (1), Command_Opcode (2), Return_Parameters.
    public struct CommandComplete: Sendable {
        public var numHCICommandPackets: UInt8
        public var opcode: HCIOpcode
        /// Status first for every command this module sends.
        public var returnParameters: ArraySlice<UInt8>
    }

    /// §7.7.15 Command Status: Status (1), Num_HCI_Command_Packets (1), Command_Opcode (2).
    public struct CommandStatus: Sendable, Hashable {
        public var status: HCIStatus
        public var numHCICommandPackets: UInt8
        public var opcode: HCIOpcode
    }

    /// §7.7.5 Disconnection Complete: Status (1), Connection_Handle (2), Reason (1).
    public struct DisconnectionComplete: Sendable, Hashable {
        public var status: HCIStatus
        public var handle: UInt16
        public var reason: HCIStatus
    }

    /// §7.7.8 Encryption Change [v1]: Status (1), Connection_Handle (2), Encryption_Enabled (1; for LE 0x00 off,
    /// 0x01 on with AES-CCM).
    public struct EncryptionChange: Sendable, Hashable {
        public var status: HCIStatus
        public var handle: UInt16
        public var enabled: Bool
    }

    /// One entry of §7.7.19 Number Of Completed Packets: Connection_Handle (2), Num_Completed_Packets (2).
    public struct CompletedPackets: Sendable, Hashable {
        public var handle: UInt16
        public var count: UInt16
    }

    /// §7.7.65.1 LE Connection Complete: Status (1), Connection_Handle (2), Role (1), Peer_Address_Type (1),
    /// Peer_Address (6), Connection_Interval (2), Peripheral_Latency (2), Supervision_Timeout (2),
    /// Central_Clock_Accuracy (1).
    /// §7.7.65.10 LE Enhanced Connection Complete [v1] inserts Local_Resolvable_Private_Address (6) and
    /// Peer_Resolvable_Private_Address (6) after Peer_Address; [v2] (subevent 0x29) appends
    /// Advertising_Handle (1) and Sync_Handle (2).
    public struct LEConnectionComplete: Sendable, Hashable {
        public var status: HCIStatus
        public var handle: UInt16
        /// 0x00 central, 0x01 peripheral.
        public var role: UInt8
        public var peerAddressType: LEAddressType
        public var peerAddress: BDAddress
        public var localResolvablePrivateAddress: BDAddress?
        public var peerResolvablePrivateAddress: BDAddress?
        /// 1.25 ms units.
        public var connectionInterval: UInt16
        public var peripheralLatency: UInt16
        /// 10 ms units.
        public var supervisionTimeout: UInt16
        public var centralClockAccuracy: UInt8
        public var subevent: LEMetaSubevent
    }

    /// §7.7.65.3 LE Connection Update Complete: Status (1), Connection_Handle (2), Connection_Interval (2),
    /// Peripheral_Latency (2), Supervision_Timeout (2).
    public struct LEConnectionUpdateComplete: Sendable, Hashable {
        public var status: HCIStatus
        public var handle: UInt16
        public var connectionInterval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16
    }

    /// Parses an H4 event payload (without the indicator). Nil when the packet is malformed: shorter or
    /// longer than Parameter_Total_Length says, or its parameters too short for the event. Parameters
    /// beyond those known are allowed (later versions of the specification append parameters).
    public static func parse(_ payload: ArraySlice<UInt8>) -> HCIEvent? {
        var c = ByteCursor(payload)
        guard let code = c.readU8(), let len = c.readU8(), let params = c.readBytes(Int(len)), c.isAtEnd else {
            return nil
        }
        var p = ByteCursor(params)
        switch HCIEventCode(rawValue: code) {
        case .commandComplete:
            guard let n = p.readU8(), let op = p.readLE16() else { return nil }
            return .commandComplete(
                CommandComplete(numHCICommandPackets: n, opcode: HCIOpcode(rawValue: op), returnParameters: p.rest))
        case .commandStatus:
            guard let s = p.readU8(), let n = p.readU8(), let op = p.readLE16() else { return nil }
            return .commandStatus(
                CommandStatus(status: HCIStatus(rawValue: s), numHCICommandPackets: n, opcode: HCIOpcode(rawValue: op)))
        case .disconnectionComplete:
            guard let s = p.readU8(), let h = p.readLE16(), let r = p.readU8() else { return nil }
            return .disconnectionComplete(
                DisconnectionComplete(
                    status: HCIStatus(rawValue: s), handle: h & 0x0FFF, reason: HCIStatus(rawValue: r)))
        case .encryptionChange:
            guard let s = p.readU8(), let h = p.readLE16(), let on = p.readU8() else { return nil }
            return .encryptionChange(
                EncryptionChange(status: HCIStatus(rawValue: s), handle: h & 0x0FFF, enabled: on != 0x00))
        case .hardwareError:
            guard let hw = p.readU8() else { return nil }
            return .hardwareError(code: hw)
        case .numberOfCompletedPackets:
            // Laid out handle, count, handle, count… as controllers and BlueZ do (cf. LEAdvertisingReport).
            guard let n = p.readU8(), p.remaining >= Int(n) * 4 else { return nil }
            var entries: [CompletedPackets] = []
            entries.reserveCapacity(Int(n))
            for _ in 0..<n {
                guard let h = p.readLE16(), let k = p.readLE16() else { return nil }
                entries.append(CompletedPackets(handle: h & 0x0FFF, count: k))
            }
            return .numberOfCompletedPackets(entries)
        case .leMeta:
            guard let sub = p.readU8() else { return nil }
            return parseLEMeta(LEMetaSubevent(rawValue: sub), p.rest)
        default:
            return .other(HCIEventCode(rawValue: code), params)
        }
    }

    static func parseLEMeta(_ sub: LEMetaSubevent, _ params: ArraySlice<UInt8>) -> HCIEvent? {
        switch sub {
        case .advertisingReport:
            return LEAdvertisingReport.parseLegacy(params, { _ in }) == nil ? nil : .leAdvertisingReport(params)
        case .extendedAdvertisingReport:
            let valid = LEAdvertisingReport.parseExtended(params, { _ in }) != nil
            return valid ? .leExtendedAdvertisingReport(params) : nil
        case .connectionComplete, .enhancedConnectionComplete, .enhancedConnectionCompleteV2:
            var p = ByteCursor(params)
            guard let s = p.readU8(), let h = p.readLE16(), let role = p.readU8(), let at = p.readU8(),
                let addr = BDAddress.read(from: &p)
            else { return nil }
            var local: BDAddress?
            var peer: BDAddress?
            if sub != .connectionComplete {
                guard let l = BDAddress.read(from: &p), let r = BDAddress.read(from: &p) else { return nil }
                (local, peer) = (l, r)
            }
            guard let interval = p.readLE16(), let latency = p.readLE16(), let timeout = p.readLE16(),
                let sca = p.readU8()
            else { return nil }
            if sub == .enhancedConnectionCompleteV2 { guard p.skip(3) else { return nil } }
            return .leConnectionComplete(
                LEConnectionComplete(
                    status: HCIStatus(rawValue: s), handle: h & 0x0FFF, role: role,
                    peerAddressType: LEAddressType(rawValue: at), peerAddress: addr,
                    localResolvablePrivateAddress: local, peerResolvablePrivateAddress: peer,
                    connectionInterval: interval, peripheralLatency: latency, supervisionTimeout: timeout,
                    centralClockAccuracy: sca, subevent: sub))
        case .connectionUpdateComplete:
            var p = ByteCursor(params)
            guard let s = p.readU8(), let h = p.readLE16(), let i = p.readLE16(), let l = p.readLE16(),
                let t = p.readLE16()
            else { return nil }
            return .leConnectionUpdateComplete(
                LEConnectionUpdateComplete(
                    status: HCIStatus(rawValue: s), handle: h & 0x0FFF, connectionInterval: i, peripheralLatency: l,
                    supervisionTimeout: t))
        case .remoteConnectionParameterRequest:
            // Connection_Handle (2), Interval_Min (2), Interval_Max (2), Max_Latency (2), Timeout (2).
            var p = ByteCursor(params)
            guard let h = p.readLE16(), let iMin = p.readLE16(), let iMax = p.readLE16(), let latency = p.readLE16(),
                let timeout = p.readLE16()
            else { return nil }
            return .leRemoteConnectionParameterRequest(
                handle: h & 0x0FFF,
                parameters: LEConnectionParameters(
                    intervalMin: iMin, intervalMax: iMax, maxLatency: latency, supervisionTimeout: timeout))
        case .longTermKeyRequest:
            // Connection_Handle (2), Random_Number (8), Encrypted_Diversifier (2).
            var p = ByteCursor(params)
            guard let h = p.readLE16(), let random = p.readLE64(), let ediv = p.readLE16() else { return nil }
            return .leLongTermKeyRequest(handle: h & 0x0FFF, randomNumber: random, encryptedDiversifier: ediv)
        default:
            return .leMeta(sub, params)
        }
    }
}

extension HCIEvent {
    /// Builds an event packet from its code and parameters: what a simulated controller sends.
    public static func packet(_ code: HCIEventCode, _ parameters: some Collection<UInt8>) -> H4Packet {
        var w = ByteWriter(capacity: 2 + parameters.count)
        w.u8(code.rawValue)
        w.u8(UInt8(truncatingIfNeeded: parameters.count))
        w.append(parameters)
        return H4Packet(type: .event, payload: w.bytes)
    }

    /// Command Complete for `opcode` with the given return parameters (Status first), granting `credits`.
    public static func commandCompletePacket(_ opcode: HCIOpcode, returnParameters: [UInt8], credits: UInt8 = 1)
        -> H4Packet
    {
        var w = ByteWriter(capacity: 3 + returnParameters.count)
        w.u8(credits)
        w.le16(opcode.rawValue)
        w.append(returnParameters)
        return packet(.commandComplete, w.bytes)
    }

    /// Command Status for `opcode`, granting `credits`.
    public static func commandStatusPacket(_ opcode: HCIOpcode, status: HCIStatus, credits: UInt8 = 1) -> H4Packet {
        var w = ByteWriter(capacity: 4)
        w.u8(status.rawValue)
        w.u8(credits)
        w.le16(opcode.rawValue)
        return packet(.commandStatus, w.bytes)
    }
}
