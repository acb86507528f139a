import BLEHCI
import BLETransport

/// One implemented command: its handler and its place in the Supported_Commands bit map
/// (Core v5.4, Vol 4, Part E, §6.27), so Read Local Supported Commands is derived from this table
/// and can never claim a command the simulator does not answer.
public struct SimCommandEntry: Sendable {
    /// Which event answers the command (§4.4, §7.7.14, §7.7.15): Command Complete for commands that finish at
    /// once, Command Status for those whose outcome follows in an event of its own. A refusal comes in the same
    /// event (`command_errors`), as a host waiting for it expects.
    public enum Answer: Sendable { case commandComplete, commandStatus }

    public let name: String
    public let supportedOctet: Int
    public let supportedBit: Int
    public let answer: Answer
    let handler: @Sendable (inout VirtualController, inout ByteCursor, SimOpcode, Duration) -> [[UInt8]]
}

/// The opcode → handler table. Each handler reads its parameters with a cursor (a short packet is
/// answered with Invalid HCI Command Parameters, never trusted) and returns the events to send.
public enum SimCommandTable {
    static func complete(_ op: SimOpcode, _ status: SimStatus = .success, _ rest: [UInt8] = []) -> [[UInt8]] {
        [SimEvents.commandComplete(op, [status.rawValue] + rest)]
    }

    static func entry(
        _ op: SimOpcode, _ name: String, octet: Int, bit: Int, answer: SimCommandEntry.Answer = .commandComplete,
        _ handler: @escaping @Sendable (inout VirtualController, inout ByteCursor, SimOpcode, Duration) -> [[UInt8]]
    ) -> (SimOpcode, SimCommandEntry) {
        (op, SimCommandEntry(name: name, supportedOctet: octet, supportedBit: bit, answer: answer, handler: handler))
    }

    /// Units of Scan_Interval / Scan_Window: 0.625 ms (§7.8.10).
    static func scanUnits(_ v: UInt16) -> Duration { .microseconds(Int64(v) * 625) }

    public static let entries: [SimOpcode: SimCommandEntry] = Dictionary(
        uniqueKeysWithValues: [
            // §7.1.6 HCI_Disconnect: Connection_Handle(2) Reason(1) → Command Status, then
            // HCI_Disconnection_Complete with the reason "Connection Terminated by Local Host".
            entry(.disconnect, "Disconnect", octet: 0, bit: 5, answer: .commandStatus) { c, p, op, _ in
                guard let h = p.readLE16(), p.readU8() != nil else {
                    return [SimEvents.commandStatus(.invalidParameters, op)]
                }
                guard let ended = c.connections.removeValue(forKey: h & 0x0FFF) else {
                    return [SimEvents.commandStatus(.unknownConnection, op)]
                }
                if let phone = ended.phone { c.endedPairings.append(phone) }
                var out = [SimEvents.commandStatus(.success, op)]
                if c.eventMask & (1 << 4) != 0 {
                    out.append(
                        SimEvents.disconnectionComplete(handle: h & 0x0FFF, reason: SimReason.localHostTerminated))
                }
                return out
            },
            // §7.5.4 HCI_Read_RSSI: Handle(2) → Status Handle(2) RSSI(1), the link's last measured RSSI.
            entry(.readRSSI, "Read RSSI", octet: 15, bit: 5) { c, p, op, _ in
                guard let h = p.readLE16() else { return complete(op, .invalidParameters) }
                guard let conn = c.connections[h & 0x0FFF] else {
                    return complete(op, .unknownConnection, [UInt8(h & 0xFF), UInt8(h >> 8), 0])
                }
                return complete(op, .success, [UInt8(h & 0xFF), UInt8(h >> 8), UInt8(bitPattern: conn.rssi)])
            },
            // §7.1.23 HCI_Read_Remote_Version_Information: Connection_Handle(2) → Command Status, then
            // HCI_Read_Remote_Version_Information_Complete (§7.7.12): Status Handle(2) Version(1)
            // Company_Identifier(2) Subversion(2). Simulated peers say Core 5.0, company 0xFFFF (none).
            entry(.readRemoteVersion, "Read Remote Version Information", octet: 2, bit: 7, answer: .commandStatus) {
                c, p, op, _ in
                guard let h = p.readLE16() else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                guard c.connections[h & 0x0FFF] != nil else { return [SimEvents.commandStatus(.unknownConnection, op)] }
                var out = [SimEvents.commandStatus(.success, op)]
                if c.eventMask & (1 << 11) != 0 {
                    var w = ByteWriter()
                    w.u8(0)
                    w.le16(h & 0x0FFF)
                    w.u8(0x09)
                    w.le16(0xFFFF)
                    w.le16(0x0000)
                    out.append(SimEvents.event(0x0C, w.bytes))
                }
                return out
            },
            // §7.3.69 HCI_Set_Event_Mask_Page_2: Event_Mask_Page_2(8); nothing on page 2 is ever sent.
            entry(.setEventMaskPage2, "Set Event Mask Page 2", octet: 22, bit: 2) { _, p, op, _ in
                guard p.readLE64() != nil else { return complete(op, .invalidParameters) }
                return complete(op)
            },
            // §7.3.1 HCI_Set_Event_Mask: Event_Mask(8).
            entry(.setEventMask, "Set Event Mask", octet: 5, bit: 6) { c, p, op, _ in
                guard let mask = p.readLE64() else { return complete(op, .invalidParameters) }
                c.eventMask = mask
                c.refreshReportMask()
                return complete(op)
            },
            // §7.3.2 HCI_Reset: no parameters; scanning stops, masks return to defaults.
            entry(.reset, "Reset", octet: 5, bit: 7) { c, _, op, _ in
                c.reset()
                return complete(op)
            },
            // §7.3.79 HCI_Write_LE_Host_Support: LE_Supported_Host(1) Unused(1).
            entry(.writeLEHostSupported, "Write LE Host Support", octet: 24, bit: 6) { _, p, op, _ in
                guard p.readU8() != nil, p.readU8() != nil else { return complete(op, .invalidParameters) }
                return complete(op)
            },
            // §7.4.1 HCI_Read_Local_Version_Information → Status HCI_Version(1) HCI_Subversion(2)
            // LMP_Version(1) Company_Identifier(2) LMP_Subversion(2). 0x0D = Core 5.4; 0x05F1 = The Linux Foundation.
            entry(.readLocalVersion, "Read Local Version Information", octet: 14, bit: 3) { _, _, op, _ in
                var w = ByteWriter()
                w.u8(0x0D)
                w.le16(0x0000)
                w.u8(0x0D)
                w.le16(0x05F1)
                w.le16(0x0000)
                return complete(op, .success, w.bytes)
            },
            // §7.4.2 HCI_Read_Local_Supported_Commands → Status Supported_Commands(64).
            // A BR/EDR-only controller (`le_unsupported`) sets no bit of a command it lacks.
            entry(.readLocalSupportedCommands, "Read Local Supported Commands", octet: 14, bit: 4) { c, _, op, _ in
                complete(op, .success, c.faults.leUnsupported ? supportedCommandsWithoutLE : supportedCommands)
            },
            // §7.4.3 HCI_Read_Local_Supported_Features → Status LMP_Features(8). Vol 2, Part C, §3.3:
            // bit 37 "BR/EDR Not Supported" and bit 38 "LE Supported (Controller)", both in octet 4. A BR/EDR-only
            // controller (`le_unsupported`) clears both: it does BR/EDR, and no LE.
            entry(.readLocalSupportedFeatures, "Read Local Supported Features", octet: 14, bit: 5) { c, _, op, _ in
                complete(op, .success, [0, 0, 0, 0, c.faults.leUnsupported ? 0x00 : 0x60, 0, 0, 0])
            },
            // §7.4.5 HCI_Read_Buffer_Size → Status ACL_Data_Packet_Length(2) Synchronous_Data_Packet_Length(1)
            // Total_Num_ACL_Data_Packets(2) Total_Num_Synchronous_Data_Packets(2).
            entry(.readBufferSize, "Read Buffer Size", octet: 14, bit: 7) { _, _, op, _ in
                var w = ByteWriter()
                w.le16(1021)
                w.u8(0)
                w.le16(8)
                w.le16(0)
                return complete(op, .success, w.bytes)
            },
            // §7.4.6 HCI_Read_BD_ADDR → Status BD_ADDR(6).
            entry(.readBDAddr, "Read BD_ADDR", octet: 15, bit: 1) { c, _, op, _ in
                var w = ByteWriter()
                c.address.write(to: &w)
                return complete(op, .success, w.bytes)
            },
            // §7.8.1 HCI_LE_Set_Event_Mask: LE_Event_Mask(8).
            entry(.leSetEventMask, "LE Set Event Mask", octet: 25, bit: 0) { c, p, op, _ in
                guard let mask = p.readLE64() else { return complete(op, .invalidParameters) }
                c.leEventMask = mask
                c.refreshReportMask()
                return complete(op)
            },
            // §7.8.2 HCI_LE_Read_Buffer_Size [v1] → Status LE_ACL_Data_Packet_Length(2) Total_Num_LE_ACL_Data_Packets(1).
            entry(.leReadBufferSize, "LE Read Buffer Size", octet: 25, bit: 1) { _, _, op, _ in
                // 251 octets (LE Data Packet Length Extension), 8 buffers.
                complete(op, .success, [0xFB, 0x00, UInt8(VirtualController.leACLBuffers)])
            },
            // §7.8.3 HCI_LE_Read_Local_Supported_Features → Status LE_Features(8). Vol 6, Part B, §4.6:
            // bit 12 "LE Extended Advertising" (octet 1, bit 4).
            entry(.leReadLocalSupportedFeatures, "LE Read Local Supported Features", octet: 25, bit: 2) { _, _, op, _ in
                complete(op, .success, [0x00, 0x10, 0, 0, 0, 0, 0, 0])
            },
            // §7.8.4 HCI_LE_Set_Random_Address: Random_Address(6).
            entry(.leSetRandomAddress, "LE Set Random Address", octet: 25, bit: 4) { c, p, op, _ in
                guard let a = BDAddress.read(from: &p) else { return complete(op, .invalidParameters) }
                c.randomAddress = a
                return complete(op)
            },
            // §7.8.10 HCI_LE_Set_Scan_Parameters: LE_Scan_Type(1) LE_Scan_Interval(2) LE_Scan_Window(2)
            // Own_Address_Type(1) Scanning_Filter_Policy(1). Interval and window 0x0004–0x4000, window ≤ interval.
            entry(.leSetScanParameters, "LE Set Scan Parameters", octet: 26, bit: 2) { c, p, op, _ in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let type = p.readU8(), let interval = p.readLE16(), let window = p.readLE16(),
                    let ownType = p.readU8(), let policy = p.readU8(),
                    type <= 1, (4...0x4000).contains(interval), (4...0x4000).contains(window), window <= interval,
                    ownType <= 3, policy <= 3
                else { return complete(op, .invalidParameters) }
                // "If the Host issues this command when scanning is enabled, the Controller shall return
                // the error code Command Disallowed (0x0C)."
                guard !c.scan.enabled else { return complete(op, .commandDisallowed) }
                c.legacyScan = (type == 1, scanUnits(interval), scanUnits(window))
                c.legacyScanPolicy = policy
                return complete(op)
            },
            // §7.8.11 HCI_LE_Set_Scan_Enable: LE_Scan_Enable(1) Filter_Duplicates(1).
            entry(.leSetScanEnable, "LE Set Scan Enable", octet: 26, bit: 3) { c, p, op, now in
                guard c.use(.legacy) else { return complete(op, .commandDisallowed) }
                guard let enable = p.readU8(), let dup = p.readU8(), enable <= 1, dup <= 1 else {
                    return complete(op, .invalidParameters)
                }
                c.setScan(
                    enabled: enable == 1, filterDuplicates: dup, extended: false, duration: nil, period: nil, now: now)
                return complete(op)
            },
            // §7.8.12 HCI_LE_Create_Connection: LE_Scan_Interval(2) LE_Scan_Window(2) Initiator_Filter_Policy(1)
            // Peer_Address_Type(1) Peer_Address(6) Own_Address_Type(1) Connection_Interval_Min(2)
            // Connection_Interval_Max(2) Max_Latency(2) Supervision_Timeout(2) Min_CE_Length(2) Max_CE_Length(2).
            // Answered with Command Status; LE Connection Complete follows when the peer is next heard
            // advertising connectably (it never comes if the peer is out of range: the host cancels).
            entry(.leCreateConnection, "LE Create Connection", octet: 26, bit: 4, answer: .commandStatus) {
                c, p, op, _ in
                guard c.use(.legacy) else { return [SimEvents.commandStatus(.commandDisallowed, op)] }
                guard p.skip(4), let policy = p.readU8(), let peerType = p.readU8(),
                    let peer = BDAddress.read(from: &p),
                    let own = p.readU8(), let minI = p.readLE16(), let maxI = p.readLE16(), let latency = p.readLE16(),
                    let timeout = p.readLE16(), p.skip(4), own <= 3
                else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                let status = c.requestConnection(
                    policy: policy, peerType: peerType, peer: peer, minI: minI, maxI: maxI, latency: latency,
                    timeout: timeout)
                return [SimEvents.commandStatus(status, op)]
            },
            // §7.8.66 HCI_LE_Extended_Create_Connection [v1]: Initiator_Filter_Policy(1) Own_Address_Type(1)
            // Peer_Address_Type(1) Peer_Address(6) Initiating_PHYs(1), then for each PHY bit set (0 LE 1M,
            // 1 LE 2M, 2 LE Coded): Scan_Interval(2) Scan_Window(2) Connection_Interval_Min(2)
            // Connection_Interval_Max(2) Max_Latency(2) Supervision_Timeout(2) Min_CE_Length(2) Max_CE_Length(2).
            // The first PHY's parameters are used; the link is made on LE 1M.
            entry(
                .leExtendedCreateConnection, "LE Extended Create Connection", octet: 37, bit: 7, answer: .commandStatus
            ) {
                c, p, op, _ in
                guard c.use(.extended) else { return [SimEvents.commandStatus(.commandDisallowed, op)] }
                guard let policy = p.readU8(), let own = p.readU8(), let peerType = p.readU8(),
                    let peer = BDAddress.read(from: &p), let phys = p.readU8(), own <= 3, phys != 0, phys & ~0x07 == 0
                else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                var first: (UInt16, UInt16, UInt16, UInt16)?
                for bit in 0..<3 where phys & (1 << bit) != 0 {
                    guard p.skip(4), let minI = p.readLE16(), let maxI = p.readLE16(), let latency = p.readLE16(),
                        let timeout = p.readLE16(), p.skip(4)
                    else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                    if first == nil { first = (minI, maxI, latency, timeout) }
                }
                let f = first!
                let status = c.requestConnection(
                    policy: policy, peerType: peerType, peer: peer, minI: f.0, maxI: f.1, latency: f.2, timeout: f.3)
                return [SimEvents.commandStatus(status, op)]
            },
            // §7.8.14 HCI_LE_Read_Filter_Accept_List_Size → Status Filter_Accept_List_Size(1).
            entry(.leReadFilterAcceptListSize, "LE Read Filter Accept List Size", octet: 26, bit: 6) { _, _, op, _ in
                complete(op, .success, [UInt8(VirtualController.acceptListSize)])
            },
            // §7.8.15 HCI_LE_Clear_Filter_Accept_List: no parameters. Refused with Command Disallowed
            // while the list is in use (see `acceptListInUse`).
            entry(.leClearFilterAcceptList, "LE Clear Filter Accept List", octet: 26, bit: 7) { c, _, op, _ in
                guard !c.acceptListInUse else { return complete(op, .commandDisallowed) }
                c.acceptList.removeAll()
                return complete(op)
            },
            // §7.8.16 HCI_LE_Add_Device_To_Filter_Accept_List: Address_Type(1) Address(6). Type 0x00
            // public, 0x01 random, 0xFF anonymous advertisements. "If the device is already in the Filter
            // Accept List, the Controller should not add the device to the list again, and should return
            // success." A full list is 0x07 Memory Capacity Exceeded.
            entry(.leAddDeviceToFilterAcceptList, "LE Add Device To Filter Accept List", octet: 27, bit: 0) {
                c, p, op, _ in
                guard let type = p.readU8(), let a = BDAddress.read(from: &p), type <= 1 || type == 0xFF else {
                    return complete(op, .invalidParameters)
                }
                guard !c.acceptListInUse else { return complete(op, .commandDisallowed) }
                let e = SimAcceptListEntry(addressType: type, address: a)
                guard c.acceptList.contains(e) || c.acceptList.count < VirtualController.acceptListSize else {
                    return complete(op, .memoryCapacityExceeded)
                }
                c.acceptList.insert(e)
                return complete(op)
            },
            // §7.8.17 HCI_LE_Remove_Device_From_Filter_Accept_List: Address_Type(1) Address(6).
            entry(.leRemoveDeviceFromFilterAcceptList, "LE Remove Device From Filter Accept List", octet: 27, bit: 1) {
                c, p, op, _ in
                guard let type = p.readU8(), let a = BDAddress.read(from: &p), type <= 1 || type == 0xFF else {
                    return complete(op, .invalidParameters)
                }
                guard !c.acceptListInUse else { return complete(op, .commandDisallowed) }
                c.acceptList.remove(SimAcceptListEntry(addressType: type, address: a))
                return complete(op)
            },
            // §7.8.18 HCI_LE_Connection_Update: Connection_Handle(2) Connection_Interval_Min(2) Max(2)
            // Max_Latency(2) Supervision_Timeout(2) Min_CE_Length(2) Max_CE_Length(2) → Command Status, then
            // LE Connection Update Complete with the maximum interval granted (the peer always accepts).
            entry(.leConnectionUpdate, "LE Connection Update", octet: 27, bit: 2, answer: .commandStatus) {
                c, p, op, _ in
                guard let h = p.readLE16(), let minI = p.readLE16(), let maxI = p.readLE16(),
                    let latency = p.readLE16(),
                    let timeout = p.readLE16(), p.skip(4),
                    (6...0x0C80).contains(minI), (6...0x0C80).contains(maxI), minI <= maxI, latency <= 0x01F3,
                    (0x0A...0x0C80).contains(timeout)
                else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                guard c.connections[h & 0x0FFF] != nil else { return [SimEvents.commandStatus(.unknownConnection, op)] }
                c.connections[h & 0x0FFF]!.interval = maxI
                c.connections[h & 0x0FFF]!.latency = latency
                c.connections[h & 0x0FFF]!.supervisionTimeout = timeout
                var out = [SimEvents.commandStatus(.success, op)]
                if c.allowsLEMeta(subevent: 0x03) {
                    out.append(
                        SimEvents.leConnectionUpdateComplete(
                            handle: h & 0x0FFF, interval: maxI, latency: latency, timeout: timeout))
                }
                return out
            },
            // §7.8.13 HCI_LE_Create_Connection_Cancel: Command Complete, then LE Connection Complete with
            // Unknown Connection Identifier (0x02) for the abandoned attempt.
            entry(.leCreateConnectionCancel, "LE Create Connection Cancel", octet: 26, bit: 5) { c, _, op, _ in
                guard let pending = c.pendingConnection else { return complete(op, .commandDisallowed) }
                c.pendingConnection = nil
                return complete(op)
                    + c.connectionCompleteEvent(
                        status: .unknownConnection, handle: 0, peerType: pending.peerAddressType, peer: pending.peer,
                        interval: 0, latency: 0, timeout: 0)
            },
            // §7.8.21 HCI_LE_Read_Remote_Features: Connection_Handle(2) → Command Status, then
            // HCI_LE_Read_Remote_Features_Complete (§7.7.65.4): Status Handle(2) LE_Features(8).
            // Simulated sensors report LE Data Packet Length Extension (bit 5) only.
            entry(.leReadRemoteFeatures, "LE Read Remote Features", octet: 27, bit: 5, answer: .commandStatus) {
                c, p, op, _ in
                guard let h = p.readLE16() else { return [SimEvents.commandStatus(.invalidParameters, op)] }
                guard c.connections[h & 0x0FFF] != nil else { return [SimEvents.commandStatus(.unknownConnection, op)] }
                var out = [SimEvents.commandStatus(.success, op)]
                if c.allowsLEMeta(subevent: 0x04) {
                    var w = ByteWriter()
                    w.u8(0x04)
                    w.u8(0)
                    w.le16(h & 0x0FFF)
                    w.le64(0x20)
                    out.append(SimEvents.event(SimEventCode.leMeta, w.bytes))
                }
                return out
            },
            // §7.8.33 HCI_LE_Set_Data_Length: Connection_Handle(2) TX_Octets(2) TX_Time(2) → Status Handle(2).
            // TX_Octets 0x001B–0x00FB, TX_Time 0x0148–0x4290.
            entry(.leSetDataLength, "LE Set Data Length", octet: 33, bit: 6) { c, p, op, _ in
                guard let h = p.readLE16(), let octets = p.readLE16(), let time = p.readLE16(),
                    (0x1B...0xFB).contains(octets), (0x148...0x4290).contains(time)
                else { return complete(op, .invalidParameters) }
                let handle = [UInt8(h & 0xFF), UInt8(h >> 8)]
                guard c.connections[h & 0x0FFF] != nil else { return complete(op, .unknownConnection, handle) }
                return complete(op, .success, handle)
            },
            // §7.8.46 HCI_LE_Read_Maximum_Data_Length → Status Supported_Max_TX_Octets(2) Supported_Max_TX_Time(2)
            // Supported_Max_RX_Octets(2) Supported_Max_RX_Time(2): 251 octets, 2120 µs (LE 1M).
            entry(.leReadMaximumDataLength, "LE Read Maximum Data Length", octet: 35, bit: 3) { _, _, op, _ in
                var w = ByteWriter()
                w.le16(251)
                w.le16(2120)
                w.le16(251)
                w.le16(2120)
                return complete(op, .success, w.bytes)
            },
            // §7.8.2 HCI_LE_Read_Buffer_Size [v2] → Status LE_ACL_Data_Packet_Length(2) Total_Num_LE_ACL_Data_Packets(1)
            // ISO_Data_Packet_Length(2) Total_Num_ISO_Data_Packets(1): no ISO.
            entry(.leReadBufferSizeV2, "LE Read Buffer Size [v2]", octet: 41, bit: 5) { _, _, op, _ in
                complete(op, .success, [0xFB, 0x00, UInt8(VirtualController.leACLBuffers), 0x00, 0x00, 0])
            },
            // §7.8.64 HCI_LE_Set_Extended_Scan_Parameters: Own_Address_Type(1) Scanning_Filter_Policy(1)
            // Scanning_PHYs(1), then for each PHY bit set (bit 0 LE 1M, bit 2 LE Coded):
            // Scan_Type(1) Scan_Interval(2) Scan_Window(2). Interval and window 0x0004–0xFFFF.
            entry(.leSetExtendedScanParameters, "LE Set Extended Scan Parameters", octet: 37, bit: 5) { c, p, op, _ in
                guard c.use(.extended) else { return complete(op, .commandDisallowed) }
                guard let ownType = p.readU8(), let policy = p.readU8(), let phys = p.readU8(),
                    ownType <= 3, policy <= 3, phys != 0, phys & ~0x05 == 0
                else { return complete(op, .invalidParameters) }
                var oneM: (Bool, Duration, Duration)?
                for bit in [0, 2] where phys & (1 << bit) != 0 {
                    guard let type = p.readU8(), let interval = p.readLE16(), let window = p.readLE16(),
                        type <= 1, interval >= 4, window >= 4, window <= interval
                    else { return complete(op, .invalidParameters) }
                    if bit == 0 { oneM = (type == 1, scanUnits(interval), scanUnits(window)) }
                }
                guard !c.scan.enabled else { return complete(op, .commandDisallowed) }
                // Every simulated advertiser uses legacy PDUs on LE 1M; a Coded-only scanner hears nothing.
                c.extendedScan = oneM ?? (false, scanUnits(0x10), .zero)
                c.extendedScanPolicy = policy
                return complete(op)
            },
            // §7.8.65 HCI_LE_Set_Extended_Scan_Enable: Enable(1) Filter_Duplicates(1) Duration(2, ×10 ms)
            // Period(2, ×1.28 s). Filter_Duplicates 2 needs a period; a period needs a duration shorter than it.
            entry(.leSetExtendedScanEnable, "LE Set Extended Scan Enable", octet: 37, bit: 6) { c, p, op, now in
                guard c.use(.extended) else { return complete(op, .commandDisallowed) }
                guard let enable = p.readU8(), let dup = p.readU8(), let duration = p.readLE16(),
                    let period = p.readLE16(),
                    enable <= 1, dup <= 2
                else { return complete(op, .invalidParameters) }
                if enable == 1 {
                    if dup == 2 && period == 0 { return complete(op, .invalidParameters) }
                    if period != 0 && (duration == 0 || Int(duration) * 10 >= Int(period) * 1280) {
                        return complete(op, .invalidParameters)
                    }
                }
                c.setScan(
                    enabled: enable == 1, filterDuplicates: dup, extended: true,
                    duration: duration == 0 ? nil : .milliseconds(Int64(duration) * 10),
                    period: period == 0 ? nil : .milliseconds(Int64(period) * 1280), now: now)
                return complete(op)
            },
        ] + peripheralEntries)

    /// Supported_Commands (64 octets), one bit per table entry.
    public static let supportedCommands: [UInt8] = {
        var bits = [UInt8](repeating: 0, count: 64)
        for e in entries.values { bits[e.supportedOctet] |= 1 << UInt8(e.supportedBit) }
        return bits
    }()
}

extension VirtualController {
    mutating func setScan(
        enabled: Bool, filterDuplicates: UInt8, extended: Bool, duration: Duration?, period: Duration?, now: Duration
    ) {
        guard enabled else {
            scan.enabled = false
            return
        }
        let p = extended ? extendedScan : legacyScan
        // Enabling while enabled only updates Filter_Duplicates (§7.8.11); the scan carries on.
        if !scan.enabled {
            scan.startedAt = now
            scan.generation &+= 1
        }
        scan.enabled = true
        scan.active = p.active
        scan.interval = p.interval
        scan.window = p.window
        scan.filterDuplicates = filterDuplicates
        scan.filterPolicy = extended ? extendedScanPolicy : legacyScanPolicy
        scan.extendedReports = extended
        scan.duration = duration
        scan.period = period
        refreshReportMask()
    }
}

extension VirtualController {
    /// §7.8.15–§7.8.17: the list "shall not be modified when" the scanning filter policy uses it
    /// and scanning is enabled, or the initiator filter policy uses it and a create connection is
    /// pending (the simulator's advertising never uses the list, so the advertising case cannot arise).
    var acceptListInUse: Bool {
        (scan.enabled && scan.filterPolicy & 0x01 != 0) || pendingConnection?.acceptList != nil
    }
}
