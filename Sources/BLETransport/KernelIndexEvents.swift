import CBluetoothShim
import Foundation

/// What happened to a kernel adapter, as the monitor channel announces it (BlueZ doc/btsnoop.txt: New Index,
/// Deleted Index, Open Index, Close Index).
public struct KernelIndexEvent: Sendable, Hashable {
    public enum Change: Sendable, Hashable {
        /// The adapter appeared (plugged in, a vhci controller made).
        case added
        /// The adapter went away (unplugged, its driver unbound).
        case removed
        /// Its HCI transport opened: powered on (by bluetoothd, `btmgmt power on`, an rfkill unblock).
        case up
        /// Its HCI transport closed: powered off (the management interface, rfkill, `hciconfig down`).
        case down
    }

    public var index: UInt16
    public var change: Change

    public init(index: UInt16, change: Change) {
        self.index = index
        self.change = change
    }

    /// One monitor message (`opcode LE16 | index LE16 | length LE16 | data`): an index event, or nil for anything
    /// else (packets, notes) and for a message cut short.
    public static func parse(_ bytes: some Collection<UInt8>) -> KernelIndexEvent? {
        var c = ByteCursor(Array(bytes))
        guard let op = c.readLE16(), let index = c.readLE16(), let length = c.readLE16(),
            c.readBytes(Int(length)) != nil
        else { return nil }
        switch MonitorFramer.Opcode(rawValue: op) {
        case .newIndex: return KernelIndexEvent(index: index, change: .added)
        case .deleteIndex: return KernelIndexEvent(index: index, change: .removed)
        case .openIndex: return KernelIndexEvent(index: index, change: .up)
        case .closeIndex: return KernelIndexEvent(index: index, change: .down)
        default: return nil
        }
    }
}

/// Every kernel adapter's arrivals, removals, power-ons and power-offs, from a monitor socket of its own. On open the
/// kernel first replays New Index and Open Index for the adapters already there, so a watcher starts knowing which
/// are up.
public typealias KernelIndexEvents = KernelMonitorEvents<KernelIndexEvent>

extension KernelMonitorEvents where Event == KernelIndexEvent {
    public convenience init() throws { try self.init(name: "hci index events", parse: KernelIndexEvent.parse) }
}
