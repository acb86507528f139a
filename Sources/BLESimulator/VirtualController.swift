import BLEHCI
import BLETransport

/// What a scanning controller has been told to do. Times are virtual.
public struct ScanState: Sendable, Hashable {
    public var enabled = false
    public var active = false
    /// Scan_Interval and Scan_Window, converted from 0.625 ms units.
    public var interval: Duration = .microseconds(10_000)
    public var window: Duration = .microseconds(10_000)
    /// 0 off, 1 on for the whole scan, 2 on and reset each period (extended scanning only).
    public var filterDuplicates: UInt8 = 0
    /// Reports go out as HCI_LE_Extended_Advertising_Report when the host used the extended commands.
    public var extendedReports = false
    /// Extended scanning: stop after this long (nil: until disabled) and, with a period, restart.
    public var duration: Duration?
    public var period: Duration?
    /// Virtual time the scan was (re)enabled: scan windows are counted from here.
    public var startedAt: Duration = .zero
    /// Scanning_Filter_Policy (§7.8.10): bit 0 set (0x01, 0x03) reports only advertisers on the
    /// Filter Accept List.
    public var filterPolicy: UInt8 = 0
    /// Bumped on every enable, so the radio can forget its duplicate filter (§7.8.11: the filter
    /// is reset when scanning is enabled).
    public var generation: UInt64 = 0
    /// Whether the host's LE event mask lets the matching report subevent through.
    public var reportsUnmasked = true

    /// Whether the receiver is listening at `t`: a scan window opens at the start of every scan interval.
    @inlinable public func windowOpen(at t: Duration) -> Bool {
        guard enabled, t >= startedAt else { return false }
        if window >= interval { return true }
        let since = (t - startedAt).seconds
        let iv = interval.seconds
        return since - (since / iv).rounded(.down) * iv < window.seconds
    }
}

/// A virtual LE controller: the HCI state machine, with no I/O. It takes a command packet and
/// returns the events to send; the caller (a `GatewayNode`) writes them. Commands are dispatched
/// through `SimCommandTable`, one entry per opcode beside its byte layout (BlueZ btdev's
/// `CMD(opcode, handler)` table).
public struct VirtualController: Sendable {
    public let address: BDAddress

    /// Set_Event_Mask (§7.3.1); the default is the spec's 0x00001FFFFFFFFFFF, which leaves out
    /// bit 61 "LE Meta event": a host that never sets the mask hears no advertising reports, as on hardware.
    public var eventMask: UInt64 = 0x0000_1FFF_FFFF_FFFF
    /// LE_Set_Event_Mask (§7.8.1); default 0x1F (subevents 0x01–0x05, not the extended report).
    public var leEventMask: UInt64 = 0x1F
    public var randomAddress: BDAddress?
    public var scan = ScanState()
    /// Legacy scan parameters and the extended ones are separate controller state.
    var legacyScan = (active: false, interval: Duration.microseconds(10_000), window: Duration.microseconds(10_000))
    var extendedScan = (active: false, interval: Duration.microseconds(10_000), window: Duration.microseconds(10_000))
    var legacyScanPolicy: UInt8 = 0
    var extendedScanPolicy: UInt8 = 0

    /// The Filter Accept List (§7.8.14–§7.8.17) and its size as LE Read Filter Accept List Size reports it.
    public var acceptList: Set<SimAcceptListEntry> = []
    public static let acceptListSize = 8
    /// Links the controller can hold at once (`max_connections`); LE Create Connection beyond it
    /// is answered with 0x09 Connection Limit Exceeded. Survives Reset (it is the hardware's).
    public var maxConnections = 4

    /// Legacy and extended advertising/scanning commands may not be mixed until the next Reset
    /// (Vol 4, Part E, §3.1.1, "Legacy and extended advertising"): the first one used wins.
    enum CommandSet { case unset, legacy, extended }
    var commandSet = CommandSet.unset

    /// What the host set up with the legacy advertising commands (the peripheral's side: enrolment).
    public var advertising = SimAdvertising()
    /// Phones' pairings whose links have ended, oldest first (tests read what the phone showed and how it ended).
    public var endedPairings: [SimPhonePairing] = []
    /// A passkey typed before any phone asked for one (`typePasskey`).
    var typedAhead: UInt32?

    /// LE connections, by handle, and the connection the host is waiting for.
    public var connections: [UInt16: SimConnection] = [:]
    public var pendingConnection: PendingConnection?
    var nextHandle: UInt16 = 0x003F
    /// Host ACL packets sitting in the LE ACL buffers, oldest first (only under `buffer_exhaustion`;
    /// otherwise a packet leaves at once). A Reset or power loss flushes them.
    var heldACL: [[UInt8]] = []

    /// The chip's own faults (`command_errors`, `le_unsupported`); kept over Reset and power loss.
    public var faults = SimControllerFaults()

    public private(set) var commandsHandled = 0
    public private(set) var unknownCommands = 0
    /// Commands refused because of `faults`.
    public private(set) var commandsRefused = 0

    public init(address: BDAddress) { self.address = address }

    /// Handles one command packet (the H4 payload after the 0x01 indicator) at virtual time `now`.
    /// Returns the H4 bytes of the events it produces, in order.
    public mutating func handle(command payload: [UInt8], now: Duration) -> [[UInt8]] {
        var c = ByteCursor(payload)
        guard let raw = c.readLE16(), let length = c.readU8(), let parameters = c.readBytes(Int(length)) else {
            return []  // the deframer only hands over whole packets; a short one has nothing to answer to
        }
        let opcode = SimOpcode(rawValue: raw)
        commandsHandled += 1
        guard let entry = SimCommandTable.entries[opcode] else {
            // Core v5.4, Vol 4, Part E, §4.5: an unknown opcode is answered, never ignored, with
            // Unknown HCI Command. Like BlueZ's btdev we use Command Status, which every host accepts.
            unknownCommands += 1
            return [SimEvents.commandStatus(.unknownCommand, opcode)]
        }
        if let refused = refusal(of: opcode, entry) {
            commandsRefused += 1
            return refused
        }
        var p = ByteCursor(parameters)
        return entry.handler(&self, &p, opcode, now)
    }

    /// The LE Meta subevent `code` reaches the host only if both masks let it (§7.3.1, §7.8.1).
    public func allowsLEMeta(subevent code: UInt8) -> Bool {
        eventMask & (1 << 61) != 0 && leEventMask & (1 << UInt64(code - 1)) != 0
    }

    /// Back to power-on defaults (HCI_Reset, §7.3.2, or a power cycle).
    public mutating func reset() {
        let (limit, chip) = (maxConnections, faults)
        self = VirtualController(address: address)
        (maxConnections, faults) = (limit, chip)
    }

    mutating func refreshReportMask() {
        scan.reportsUnmasked = allowsLEMeta(
            subevent: scan.extendedReports ? SimEventCode.leExtendedAdvertisingReport : SimEventCode.leAdvertisingReport
        )
    }

    /// Claims the legacy or extended command set; false when the other one is already in use.
    mutating func use(_ set: CommandSet) -> Bool {
        if commandSet == .unset { commandSet = set }
        return commandSet == set
    }
}
