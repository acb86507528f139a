import CBluetoothShim
import Foundation

/// Scanning beside a running bluetoothd, without taking the adapter from it.
///
/// Two kernel sockets, each with one owner: a management socket (HCI_CHANNEL_CONTROL) keeps an LE
/// discovery running (`DiscoveryKeeper`), and a monitor socket (HCI_CHANNEL_MONITOR) hands over
/// the controller's own HCI events for this adapter, so the layers above decode the same LE
/// Advertising Report bytes as in exclusive mode and captures look the same. The raw channel is
/// not used: commands sent on it race the kernel's own scan state machine. See
/// docs/design/transport.md for the experiment that chose this.
///
/// Receive-only: `send` throws `.unsupported`.
public final class KernelSharedTransport: HCITransport, @unchecked Sendable {
    public let name: String
    public var incoming: StageQueue<H4Packet> { monitor.incoming }

    private let monitor: FileDescriptorTransport
    private let control: OwnedDescriptor
    private let clock: any BLEClock
    private let lock = NSLock()
    private var keeper: DiscoveryKeeper
    private var ticker: Task<Void, Never>?

    public var statistics: TransportStatistics { monitor.statistics }
    /// How many LE discoveries this transport has started (restarts included).
    public var discoveryStarts: Int { lock.withLock { keeper.starts } }
    /// The advertisement monitor registered to turn the duplicate filter off, once the kernel confirmed it.
    public var advertisementMonitorHandle: UInt16? { lock.withLock { keeper.monitorHandle } }

    /// - Parameter restartInterval: restart our discovery this often to clear the controller's
    ///   duplicate filter (nil: never).
    ///   - disableDuplicateFilter: register an advertisement monitor so the kernel scans without the
    ///     controller's duplicate filter (see `DiscoveryKeeper`).
    public init(
        adapter: String, clock: any BLEClock, restartInterval: Duration? = .seconds(10),
        disableDuplicateFilter: Bool = true
    ) throws {
        guard let index = KernelAdapters.index(of: adapter) else {
            throw TransportError(.badSpec, "not a kernel adapter name: \(adapter) (expected hciN)")
        }
        // A powered-off adapter has no scan to follow: say so, rather than listen to nothing. One that is powering
        // on counts: the monitor's Open Index comes as the kernel starts its init (HCI_RUNNING), before HCI_UP,
        // and our discovery starts once the management interface says it is powered (`DiscoveryKeeper`).
        let flags = try KernelHCISocket.flags(index: index, adapterName: adapter)
        guard flags & (KernelHCISocket.upFlag | KernelHCISocket.runningFlag) != 0 else {
            throw TransportError(
                .adapterDown,
                "\(adapter) is powered off: shared mode listens once bluetoothd (or "
                    + "`btmgmt -i \(adapter) power on`) powers it")
        }
        self.name = "\(adapter) (shared)"
        self.clock = clock
        self.keeper = DiscoveryKeeper(
            index: index, restartInterval: restartInterval,
            disableDuplicateFilter: disableDuplicateFilter)
        let monitorFD = try KernelHCISocket.open(
            device: KernelHCISocket.noDevice,
            channel: Int32(CBT_HCI_CHANNEL_MONITOR), adapterName: adapter)
        self.monitor = try FileDescriptorTransport(
            name: name, fd: monitorFD, framer: MonitorFramer(index: index),
            acceptsSend: false, readBufferSize: 65536 + 16, whenFull: .drop)
        do {
            let controlFD = try KernelHCISocket.open(
                device: KernelHCISocket.noDevice,
                channel: Int32(CBT_HCI_CHANNEL_CONTROL), adapterName: adapter)
            self.control = try OwnedDescriptor(controlFD)
        } catch {
            monitor.close()
            throw error
        }
        let start = lock.withLock { keeper.begin(now: clock.now()) }
        try sendAll(start)
        let thread = Thread { [self] in self.controlLoop() }
        thread.name = "mgmt \(adapter)"
        thread.start()
        ticker = Task { [weak self, clock] in
            while !Task.isCancelled {
                do { try await clock.sleep(for: .seconds(1)) } catch { return }
                guard let self else { return }
                // The consumer of `incoming` went away (or the adapter vanished): release the mgmt side too.
                if self.monitor.isClosed {
                    self.close()
                    return
                }
                let now = clock.now()
                let out = self.lock.withLock { self.keeper.tick(now: now) }
                try? self.sendAll(out)
            }
        }
    }

    deinit { close() }

    private func sendAll(_ messages: [MgmtMessage]) throws {
        for m in messages { try control.writeAll(m.bytes, what: "write to the management socket") }
    }

    private func controlLoop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer {
            buffer.deallocate()
            control.release()
        }
        while let n = try? control.read(into: buffer), n > 0 {
            guard let message = MgmtMessage.parse(buffer[0..<n]) else { continue }
            let now = clock.now()
            let out = lock.withLock { keeper.handle(message, now: now) }
            try? sendAll(out)
        }
    }

    public func send(_ packet: H4Packet) throws {
        throw TransportError(
            .unsupported,
            "\(name) only listens: shared mode cannot send HCI packets"
                + " (use --mode exclusive to drive the controller)")
    }

    public func close() {
        let t: Task<Void, Never>? = lock.withLock {
            defer { ticker = nil }
            return ticker
        }
        t?.cancel()
        // Leave the adapter as we found it: our discovery stopped, our monitor removed.
        if !control.isClosing { try? sendAll(lock.withLock { keeper.finish() }) }
        control.close()
        monitor.close()
    }
}
