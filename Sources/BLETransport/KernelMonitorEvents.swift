import CBluetoothShim
import Foundation

/// One kind of event read from a monitor socket of its own (HCI_CHANNEL_MONITOR; CAP_NET_RAW, as shared mode needs
/// anyway): every message goes through `parse`, and what it recognises is delivered. One reader thread per watcher;
/// `close()` (or dropping the stream's consumer) ends it. The events are rare (adapters coming and going, a key
/// distributed at a pairing), so the stream is not bounded.
public final class KernelMonitorEvents<Event: Sendable>: @unchecked Sendable {
    public let events: AsyncThrowingStream<Event, any Error>
    private let descriptor: OwnedDescriptor

    /// - Parameters:
    ///   - name: the reader thread's name.
    ///   - parse: one monitor message (`opcode LE16 | index LE16 | length LE16 | data`) to an event, or nil.
    public init(name: String, parse: @escaping @Sendable (UnsafeRawBufferPointer) -> Event?) throws {
        let fd = try KernelHCISocket.open(
            device: KernelHCISocket.noDevice, channel: Int32(CBT_HCI_CHANNEL_MONITOR),
            adapterName: "the monitor channel")
        descriptor = try OwnedDescriptor(fd)
        let (events, continuation) = AsyncThrowingStream.makeStream(of: Event.self)
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
                    if let e = parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) { continuation.yield(e) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { descriptor.close() }

    public func close() { descriptor.close() }
}
