import BLEHCI
import BLETransport

/// The lifecycle's vocabulary: the states it publishes, the ladder's steps, the events it takes and the actions it
/// returns, its settings and its counters.
extension AdapterLifecycle {
    /// The adapter state published on `…/adapter` (schema/v1/adapter.json): iOS's CBManagerState, plus what a
    /// Linux gateway can tell apart (blocked by rfkill, absent).
    public struct Status: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let poweredOn = Status(rawValue: "poweredOn")
        public static let poweredOff = Status(rawValue: "poweredOff")
        public static let resetting = Status(rawValue: "resetting")
        /// A capability is missing (CAP_NET_RAW / CAP_NET_ADMIN).
        public static let unauthorized = Status(rawValue: "unauthorized")
        /// No LE, or no Bluetooth in this kernel.
        public static let unsupported = Status(rawValue: "unsupported")
        /// rfkill blocks the radio.
        public static let blocked = Status(rawValue: "blocked")
        /// No such adapter (unplugged, or never there).
        public static let absent = Status(rawValue: "absent")
        public static let unknown = Status(rawValue: "unknown")
        public var description: String { rawValue }
    }

    /// One rung of the ladder, in climbing order. The raw values name the step in logs, payloads and counters.
    public enum Step: String, CaseIterable, Sendable, Comparable, CustomStringConvertible {
        /// Stop and start scanning on the open controller.
        case reenableScan = "reenable_scan"
        /// HCI Reset and the whole bring-up, then scanning.
        case resetController = "reset_controller"
        /// Close the transport and open it again (kernel: the adapter is closed and opened; H4 stream: reconnect).
        case powerCycle = "power_cycle"
        /// Clear rfkill's soft block on the adapter's radio.
        case rfkillUnblock = "rfkill_unblock"
        /// USBDEVFS_RESET on the adapter's USB device.
        case usbReset = "usb_reset"
        /// Nothing left to try: wait for the adapter to come back (hotplug, rfkill, a slow periodic retry).
        case awaitAdapter = "await_adapter"

        public var description: String { rawValue }
        public static func < (a: Step, b: Step) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// Why opening the transport failed, as far as the lifecycle cares.
    public enum OpenFailure: Sendable, Equatable {
        /// No such adapter (unplugged, never there): wait for it.
        case absent
        /// A capability is missing: no retry can fix it soon.
        case permissionDenied
        /// No Bluetooth in this kernel.
        case unsupported
        /// rfkill blocks the radio.
        case blocked
        /// Busy, down, or another I/O error: worth retrying.
        case other
    }

    public enum Event: Sendable, Equatable {
        /// The caller starts (or restarts) the lifecycle: the adapter should be opened.
        case start
        case transportOpened
        case transportFailed(OpenFailure, reason: String)
        case bringUpSucceeded
        /// Bring-up failed; `leUnsupported` when the controller cannot do LE at all (no retry can fix that).
        case bringUpFailed(reason: String, leUnsupported: Bool)
        /// Scanning is enabled: the adapter is usable.
        case scanEnabled
        /// A ladder step could not be carried out (a command failed, the step is not possible here).
        case stepFailed(Step, reason: String)
        /// An advertising report arrived.
        case reportReceived
        /// Scanning was stopped or started on purpose while the adapter stays usable (with two adapters the other
        /// one may scan): no silence is counted until reports flow again.
        case scanDutyChanged
        /// HCI_Hardware_Error (Core v5.4, Vol 4, Part E, §7.7.16): "the Host should reset the Controller".
        case hardwareError(code: UInt8)
        /// A command got no answer within the controller's bound.
        case commandTimedOut(reason: String)
        /// The transport ended (EOF, unplug, I/O error).
        case transportEnded(reason: String)
        /// rfkill's view of this adapter's radio changed.
        case rfkillChanged(soft: Bool, hard: Bool)
        case adapterAdded
        case adapterRemoved
        /// The adapter was powered off by whoever owns it (shared mode: the kernel, on a management Set Powered, an
        /// rfkill block or `hciconfig down`). Nothing is broken and nothing is the gateway's to recover: the state is
        /// `poweredOff` (or `blocked`), and the adapter is opened again when it comes back (`adapterAdded`), or at
        /// the slow retry.
        case adapterPoweredOff(reason: String)
        /// Nothing happened, but time passed (the caller's wait ended).
        case timePassed
    }

    public enum Action: Sendable, Equatable {
        /// Publish the adapter state (retained) with a reason; the caller adds what it knows (address, version).
        case publish(Status, reason: String?)
        /// Open the transport, bring the controller up and enable scanning, reporting each outcome as an event.
        case open
        /// Run one ladder step; its outcome comes back as events (`scanEnabled` when it worked, `stepFailed`,
        /// `transportFailed`, `bringUpFailed` … when it did not).
        case run(Step, attempt: Int, of: Int)
        /// Scanning is back: count it.
        case recovered(by: Step, after: Duration)
        /// Deliver `.timePassed` at this time (the latest `wait` replaces earlier ones).
        case wait(until: Duration)
    }

    public struct Configuration: Sendable, Equatable {
        /// Scanning, reports had been flowing, and none for this long: the scan is stalled (a silent scan stall).
        public var silenceTimeout: Duration = .seconds(60)
        /// After a silence climb that did not bring reports back, the silence bound doubles up to this many times
        /// its configured value, so an emptied room is not reset forever at the same pace.
        public var silenceTimeoutMaxFactor: Int = 8
        /// First wait between attempts of one step, and between climbs; doubles up to `maxBackoff`.
        public var initialBackoff: Duration = .seconds(1)
        public var maxBackoff: Duration = .seconds(30)
        /// Scanning this long without a fault makes the adapter healthy again: the climb backoff starts over.
        public var stableAfter: Duration = .seconds(60)
        /// Attempts per step before the next step.
        public var attempts: [Step: Int] = [
            .reenableScan: 1, .resetController: 2, .powerCycle: 2,
            .rfkillUnblock: 2, .usbReset: 1,
        ]
        /// Bound on one operation (an open, a step) whose outcome the caller never reports.
        public var operationTimeout: Duration = .seconds(20)
        /// Whether the gateway may clear an rfkill soft block (someone may have blocked the radio on purpose).
        public var allowRfkillUnblock = false
        /// Whether a USB device reset may be tried (needs the adapter's USB path and CAP_SYS_ADMIN-ish access).
        public var allowUSBReset = false
        public init() {}
    }

    /// Counters for the health topic.
    public struct Statistics: Sendable, Equatable {
        /// Attempts per step.
        public var attempts: [Step: Int] = [:]
        /// Recoveries per step that brought scanning back.
        public var recoveries: [Step: Int] = [:]
        /// Climbs started.
        public var climbs = 0
        /// Climbs that went past the last step.
        public var exhausted = 0
        /// Silence watchdog firings.
        public var silences = 0
        /// Time from fault to scanning again: the last one, and the total over all recoveries.
        public var lastTimeToRecover: Duration?
        public var totalTimeToRecover: Duration = .zero
        public init() {}
    }
}
