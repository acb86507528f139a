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

/// Every kernel adapter's arrivals, removals, power-ons and power-offs, from a monitor socket of its own
/// (HCI_CHANNEL_MONITOR; CAP_NET_RAW, as shared mode needs anyway). On open the kernel first replays New Index
/// and Open Index for the adapters already there, so a watcher starts knowing which are up. One reader thread
/// per watcher; `close()` (or dropping the stream's consumer) ends it.
public final class KernelIndexEvents: @unchecked Sendable {
    public let events: AsyncThrowingStream<KernelIndexEvent, any Error>
    private let descriptor: OwnedDescriptor

    public init() throws {
        let fd = try KernelHCISocket.open(
            device: KernelHCISocket.noDevice, channel: Int32(CBT_HCI_CHANNEL_MONITOR),
            adapterName: "the monitor channel")
        descriptor = try OwnedDescriptor(fd)
        let (events, continuation) = AsyncThrowingStream.makeStream(of: KernelIndexEvent.self)
        self.events = events
        continuation.onTermination = { [descriptor] _ in descriptor.close() }
        let thread = Thread { [descriptor, continuation] in
            // A monitor message is at most a header and one HCI packet.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 16, alignment: 8)
            defer {
                buffer.deallocate()
                descriptor.release()
            }
            do {
                while let n = try descriptor.read(into: buffer), n > 0 {
                    if let e = KernelIndexEvent.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) {
                        continuation.yield(e)
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "hci index events"
        thread.start()
    }

    deinit { descriptor.close() }

    public func close() { descriptor.close() }
}
