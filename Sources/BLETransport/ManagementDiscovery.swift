/// The Bluetooth management interface (HCI_CHANNEL_CONTROL, BlueZ doc/mgmt-api.txt): just enough
/// of it to make the kernel scan for LE devices beside bluetoothd.
///
/// Every message is `opcode LE16 | controller index LE16 | parameter length LE16 | parameters`.
struct MgmtMessage: Hashable, Sendable {
    var code: UInt16
    var index: UInt16
    var parameters: [UInt8]

    var bytes: [UInt8] {
        var w = ByteWriter(capacity: 6 + parameters.count)
        w.le16(code)
        w.le16(index)
        w.le16(UInt16(parameters.count))
        w.append(parameters)
        return w.bytes
    }

    static func parse(_ bytes: some Collection<UInt8>) -> MgmtMessage? {
        var c = ByteCursor(Array(bytes))
        guard let code = c.readLE16(), let index = c.readLE16(), let len = c.readLE16(),
            let p = c.readBytes(Int(len))
        else { return nil }
        return MgmtMessage(code: code, index: index, parameters: Array(p))
    }
}

/// Management opcodes and events used here (mgmt-api.txt), an open set.
package enum Mgmt {
    static let startDiscovery: UInt16 = 0x0023  // Address_Type (1 octet)
    static let stopDiscovery: UInt16 = 0x0024  // Address_Type (1 octet)
    /// Add Advertisement Patterns Monitor: Pattern_Count (1), then per pattern AD_Type (1), Offset (1),
    /// Length (1), Value (31). Returns Monitor_Handle (2).
    static let addAdvPatternsMonitor: UInt16 = 0x0052
    static let removeAdvMonitor: UInt16 = 0x0053  // Monitor_Handle (2)
    /// Read Controller Information → Address (6), Bluetooth_Version (1), Manufacturer (2), Supported_Settings (4),
    /// Current_Settings (4), …
    package static let readControllerInformation: UInt16 = 0x0004
    /// Read Advertising Features → Supported_Flags (4), Max_Adv_Data_Len (1), Max_Scan_Rsp_Len (1),
    /// Max_Instances (1), Num_Instances (1), Instance[Num_Instances] (1 each).
    package static let readAdvertisingFeatures: UInt16 = 0x003D
    /// Add Advertising: Instance (1), Flags (4), Duration (2), Timeout (2), Adv_Data_Len (1), Scan_Rsp_Len (1),
    /// Adv_Data, Scan_Rsp → Instance (1).
    package static let addAdvertising: UInt16 = 0x003E
    /// Remove Advertising: Instance (1) → Instance (1).
    package static let removeAdvertising: UInt16 = 0x003F

    static let commandComplete: UInt16 = 0x0001  // Command_Opcode (2), Status (1), Return_Parameters
    static let commandStatus: UInt16 = 0x0002  // Command_Opcode (2), Status (1)
    static let indexRemoved: UInt16 = 0x0005
    static let newSettings: UInt16 = 0x0006  // Current_Settings (4); bit 0 = Powered
    static let discovering: UInt16 = 0x0013  // Address_Type (1), Discovering (1)

    /// Address_Type bits 1 (LE Public) and 2 (LE Random): an LE-only discovery.
    static let leAddressTypes: UInt8 = 0x06
}

/// Keeps the kernel scanning: a state machine that takes management events and clock ticks and
/// returns the commands to send.
///
/// - It starts an LE discovery, and again whenever the kernel reports `discovering = false`
///   (a discovery ends on its own, bluetoothd or another client may stop it, the adapter may be
///   powered off and on).
/// - While the discovery is ours, it restarts it every `restartInterval`: the kernel enables the
///   controller's duplicate filter for discovery (hci_sync.c `hci_active_scan_sync`), which would
///   leave one report per device per discovery, and a restart clears the filter.
/// - If someone else's discovery is running (Busy), it rides along and does not touch it.
/// - With `disableDuplicateFilter` it registers an advertisement monitor: while any monitor exists
///   the kernel scans with the controller's duplicate filter off (hci_sync.c: "Duplicate filter
///   should be disabled when some advertisement monitor is activated"), so every advertisement
///   reaches the monitor channel. The pattern (manufacturer data of company 0xFFFF, reserved for
///   tests) matches nothing real, so bluetoothd's own monitors see no extra devices. It is removed
///   on close; a crash leaves it registered until the adapter is reset.
struct DiscoveryKeeper: Sendable {
    enum State: Sendable, Equatable { case idle, starting, ours, theirs, stopping, notPowered, finished }

    let index: UInt16
    let restartInterval: Duration?
    private(set) var state: State = .idle
    private(set) var lastStart: Duration = .zero
    /// How many discoveries we started, for diagnostics and tests.
    private(set) var starts = 0

    let disableDuplicateFilter: Bool
    /// The advertisement monitor we registered, if any.
    private(set) var monitorHandle: UInt16?
    private var monitorRequested = false

    init(index: UInt16, restartInterval: Duration?, disableDuplicateFilter: Bool = false) {
        self.index = index
        self.restartInterval = restartInterval
        self.disableDuplicateFilter = disableDuplicateFilter
    }

    /// One pattern: AD type 0xFF at offset 0, length 2, value FF FF (company 0xFFFF), zero-padded to 31.
    static let monitorPattern: [UInt8] = [0x01, 0xFF, 0x00, 0x02, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 29)

    /// What to send before the transport closes: stop our discovery, remove our monitor.
    mutating func finish() -> [MgmtMessage] {
        var out: [MgmtMessage] = []
        if state == .ours || state == .starting { out.append(command(Mgmt.stopDiscovery)) }
        if let h = monitorHandle {
            out.append(
                MgmtMessage(
                    code: Mgmt.removeAdvMonitor, index: index,
                    parameters: [UInt8(truncatingIfNeeded: h), UInt8(truncatingIfNeeded: h >> 8)]))
        }
        state = .finished
        monitorHandle = nil
        return out
    }

    private func command(_ code: UInt16) -> MgmtMessage {
        MgmtMessage(code: code, index: index, parameters: [Mgmt.leAddressTypes])
    }

    /// The first command.
    mutating func begin(now: Duration) -> [MgmtMessage] {
        guard state != .finished else { return [] }
        state = .starting
        lastStart = now
        starts += 1
        var out: [MgmtMessage] = []
        if disableDuplicateFilter && !monitorRequested {
            monitorRequested = true
            out.append(MgmtMessage(code: Mgmt.addAdvPatternsMonitor, index: index, parameters: Self.monitorPattern))
        }
        out.append(command(Mgmt.startDiscovery))
        return out
    }

    mutating func handle(_ m: MgmtMessage, now: Duration) -> [MgmtMessage] {
        guard m.index == index, state != .finished else { return [] }
        var c = ByteCursor(m.parameters)
        switch m.code {
        case Mgmt.commandComplete, Mgmt.commandStatus:
            guard let op = c.readLE16(), let status = c.readU8().map(ManagementStatus.init(rawValue:)) else {
                return []
            }
            if op == Mgmt.addAdvPatternsMonitor, m.code == Mgmt.commandComplete, status == .success {
                monitorHandle = c.readLE16()
                return []
            }
            if op == Mgmt.startDiscovery && state == .starting {
                switch status {
                case .success: state = .ours
                case .busy: state = .theirs
                case .notPowered: state = .notPowered
                default: state = .idle  // retried at the next tick
                }
            } else if op == Mgmt.stopDiscovery && state == .stopping {
                // The Discovering(false) event that follows restarts it; if the stop failed, start anyway.
                if status != .success { return begin(now: now) }
            }
            return []
        case Mgmt.discovering:
            guard c.readU8() != nil, let on = c.readU8() else { return [] }
            if on == 0 && state != .starting { return begin(now: now) }
            if on != 0 && state == .idle { state = .theirs }
            return []
        case Mgmt.newSettings:
            guard let settings = c.readLE32() else { return [] }
            if settings & 1 != 0 && state == .notPowered { return begin(now: now) }
            if settings & 1 == 0 { state = .notPowered }
            return []
        default:
            return []
        }
    }

    /// Called periodically (about once a second).
    mutating func tick(now: Duration) -> [MgmtMessage] {
        switch state {
        case .idle:
            return begin(now: now)
        case .ours:
            if let every = restartInterval, now - lastStart >= every {
                state = .stopping
                lastStart = now
                return [command(Mgmt.stopDiscovery)]
            }
            return []
        case .starting, .stopping:
            // A lost reply must not wedge the keeper.
            if now - lastStart >= .seconds(5) { return begin(now: now) }
            return []
        case .theirs, .notPowered, .finished:
            return []
        }
    }
}
