/// Where the controller is, as given on the command line or in the config file.
///
///     hci0                     a kernel adapter (exclusive or shared, see `AdapterMode`)
///     unix:/run/ctl.sock       an H4 stream from a listening Unix socket (simulator, btproxy)
///     tcp:host:port            an H4 stream over TCP ([v6::addr]:port for IPv6)
///     serial:/dev/ttyUSB0@921600[,rtscts]   an H4 UART (default 115200 baud, no flow control)
///     file:capture.btsnoop     a capture replayed (btsnoop or raw H4)
public enum DeviceSpec: Sendable, Hashable, CustomStringConvertible {
    case kernel(adapter: String)
    case unix(path: String)
    case tcp(host: String, port: UInt16)
    case serial(path: String, baud: Int, flowControl: Bool)
    case file(path: String)

    public init(parsing text: String) throws {
        func bad(_ why: String) -> TransportError {
            TransportError(
                .badSpec,
                "bad device \"\(text)\": \(why); expected hciN, unix:PATH, tcp:HOST:PORT,"
                    + " serial:/dev/ttyX[@BAUD][,rtscts] or file:PATH")
        }
        if text.hasPrefix("hci") {
            guard KernelAdapters.index(of: text) != nil else {
                throw bad("an adapter is hci followed by its number")
            }
            self = .kernel(adapter: text)
            return
        }
        guard let colon = text.firstIndex(of: ":") else { throw bad("no scheme") }
        let scheme = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "unix":
            guard !rest.isEmpty else { throw bad("missing socket path") }
            self = .unix(path: rest)
        case "file":
            guard !rest.isEmpty else { throw bad("missing capture path") }
            self = .file(path: rest)
        case "tcp":
            let host: String
            let portText: Substring
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { throw bad("unclosed [ in IPv6 address") }
                host = String(rest[rest.index(after: rest.startIndex)..<close])
                let after = rest[rest.index(after: close)...]
                guard after.hasPrefix(":") else { throw bad("missing :PORT") }
                portText = after.dropFirst()
            } else {
                guard let c = rest.lastIndex(of: ":") else { throw bad("missing :PORT") }
                host = String(rest[..<c])
                portText = rest[rest.index(after: c)...]
            }
            guard !host.isEmpty else { throw bad("missing host") }
            guard let port = UInt16(portText), port > 0 else { throw bad("port must be 1…65535") }
            self = .tcp(host: host, port: port)
        case "serial":
            var body = Substring(rest)
            var flow = false
            if body.hasSuffix(",rtscts") {
                flow = true
                body = body.dropLast(",rtscts".count)
            }
            var path = body
            var baud = 115_200
            if let at = body.lastIndex(of: "@") {
                path = body[..<at]
                guard let b = Int(body[body.index(after: at)...]), b > 0 else {
                    throw bad("baud rate must be a number")
                }
                guard H4Stream.baudConstant(b) != nil else { throw bad("unsupported baud rate \(b)") }
                baud = b
            }
            guard path.hasPrefix("/") else { throw bad("a serial device is an absolute path such as /dev/ttyUSB0") }
            self = .serial(path: String(path), baud: baud, flowControl: flow)
        default:
            throw bad("unknown scheme \"\(scheme)\"")
        }
    }

    public var description: String {
        switch self {
        case .kernel(let a): a
        case .unix(let p): "unix:\(p)"
        case .tcp(let h, let p): h.contains(":") ? "tcp:[\(h)]:\(p)" : "tcp:\(h):\(p)"
        case .serial(let p, let b, let f): "serial:\(p)@\(b)" + (f ? ",rtscts" : "")
        case .file(let p): "file:\(p)"
        }
    }
}

/// How a kernel adapter is used.
public enum AdapterMode: String, Sendable, Hashable, CaseIterable {
    /// HCI_CHANNEL_USER: the gateway owns the controller (bluetoothd must not be powering it).
    case exclusive
    /// Beside bluetoothd: the kernel scans, the gateway listens (receive-only).
    case shared

    /// Why `spec` cannot be opened in this mode, or nil. Shared mode listens beside the kernel's own stack, so it
    /// needs an adapter the kernel has (or a capture, which only ever listens): a controller on a socket or a
    /// serial line has no kernel beside it to share with.
    public func refusal(for spec: DeviceSpec) -> String? {
        switch (self, spec) {
        case (.exclusive, _), (.shared, .kernel), (.shared, .file): nil
        case (.shared, .unix), (.shared, .tcp), (.shared, .serial):
            "shared mode listens beside the kernel's Bluetooth stack and needs a kernel adapter (hciN); \(spec) is a"
                + " controller the gateway reaches itself: use exclusive mode"
        }
    }
}

/// Options that only some transports use.
public struct TransportOptions: Sendable {
    /// Replay pacing for `file:` specs.
    public var replayPacing: CaptureReplayTransport.Pacing = .asFastAsPossible
    /// Shared mode: restart the kernel's discovery this often to clear the duplicate filter.
    public var sharedRestartInterval: Duration? = .seconds(10)
    /// Shared mode: register an advertisement monitor so the kernel scans with duplicate filtering off.
    public var sharedDisableDuplicateFilter = true
    /// Also record both directions to this btsnoop file (`--capture FILE`).
    public var capturePath: String?
    /// What the capture keeps of each packet: the upper layers' redaction of keys (nil: the packets as they are,
    /// `--capture-keys`). The transport knows no protocol above H4, so the function comes from them.
    public var captureRedaction: (@Sendable (H4Packet) -> H4Packet)?
    /// Exclusive mode: close the adapter with HCIDEVDOWN when the kernel says it is busy.
    public var bringDownIfUp = false
    /// Kernel adapters: the public address ("AA:BB:CC:DD:EE:FF") of the adapter to open. The named adapter is
    /// used when it has this address, otherwise whichever adapter has it now; none has it: `.noSuchAdapter`.
    /// Check it where it is configured with `KernelAdapters.normalizedAddress`.
    public var adapterAddress: String?

    public init() {}
}

/// Opens the transport a spec names. `mode` applies to kernel adapters only. With
/// `options.capturePath` the transport is wrapped in a `CapturingTransport`.
public func openTransport(
    _ spec: DeviceSpec, mode: AdapterMode = .exclusive, clock: any BLEClock,
    options: TransportOptions = TransportOptions()
) throws -> any HCITransport {
    let transport = try openBareTransport(spec, mode: mode, clock: clock, options: options)
    guard let path = options.capturePath else { return transport }
    do {
        return CapturingTransport(
            wrapping: transport, writer: try BtsnoopFileWriter(path: path), clock: clock,
            redaction: options.captureRedaction)
    } catch {
        transport.close()
        throw error
    }
}

private func openBareTransport(
    _ spec: DeviceSpec, mode: AdapterMode, clock: any BLEClock,
    options: TransportOptions
) throws -> any HCITransport {
    if let why = mode.refusal(for: spec) { throw TransportError(.badSpec, why) }
    switch spec {
    case .kernel(let configured):
        let adapter = try KernelAdapters.resolve(adapter: configured, address: options.adapterAddress)
        switch mode {
        case .exclusive: return try KernelExclusive.open(adapter: adapter, bringDownIfUp: options.bringDownIfUp)
        case .shared:
            return try KernelSharedTransport(
                adapter: adapter, clock: clock,
                restartInterval: options.sharedRestartInterval,
                disableDuplicateFilter: options.sharedDisableDuplicateFilter)
        }
    case .unix(let path): return try H4Stream.connectUnix(path: path)
    case .tcp(let host, let port): return try H4Stream.connectTCP(host: host, port: port)
    case .serial(let path, let baud, let flow):
        return try H4Stream.openSerial(path: path, baud: baud, flowControl: flow)
    case .file(let path): return try CaptureReplayTransport(path: path, clock: clock, pacing: options.replayPacing)
    }
}
