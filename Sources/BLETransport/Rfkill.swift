import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One record of /dev/rfkill (include/uapi/linux/rfkill.h, `struct rfkill_event`): 8 bytes, host order —
/// `__u32 idx; __u8 type; __u8 op; __u8 soft; __u8 hard;`. Newer kernels append fields (`hard_block_reasons`);
/// a reader that asks for 8 bytes gets the first 8, and longer records are parsed by their first 8.
public struct RfkillEvent: Sendable, Hashable {
    /// `enum rfkill_type`; unknown values print by number.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let all = Kind(rawValue: 0)
        public static let wlan = Kind(rawValue: 1)
        public static let bluetooth = Kind(rawValue: 2)
        public var description: String {
            [0: "all", 1: "wlan", 2: "bluetooth"][rawValue] ?? "rfkill type \(rawValue)"
        }
    }

    /// `enum rfkill_operation`.
    public struct Operation: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let add = Operation(rawValue: 0)
        public static let delete = Operation(rawValue: 1)
        public static let change = Operation(rawValue: 2)
        public static let changeAll = Operation(rawValue: 3)
        public var description: String {
            [0: "add", 1: "del", 2: "change", 3: "change all"][rawValue] ?? "rfkill op \(rawValue)"
        }
    }

    public static let size = 8

    public var index: UInt32
    public var kind: Kind
    public var operation: Operation
    public var soft: Bool
    public var hard: Bool

    public init(index: UInt32, kind: Kind, operation: Operation, soft: Bool, hard: Bool) {
        self.index = index
        self.kind = kind
        self.operation = operation
        self.soft = soft
        self.hard = hard
    }

    /// Parses the first 8 bytes; nil when short. `idx` is in host order (little-endian on every target we build).
    public static func parse(_ bytes: some Collection<UInt8>) -> RfkillEvent? {
        var c = ByteCursor(Array(bytes.prefix(size)))
        guard let idx = c.readLE32(), let kind = c.readU8(), let op = c.readU8(), let soft = c.readU8(),
            let hard = c.readU8()
        else { return nil }
        return RfkillEvent(
            index: idx, kind: Kind(rawValue: kind), operation: Operation(rawValue: op),
            soft: soft != 0, hard: hard != 0)
    }

    public var bytes: [UInt8] {
        var w = ByteWriter()
        w.le32(index)
        w.u8(kind.rawValue)
        w.u8(operation.rawValue)
        w.u8(soft ? 1 : 0)
        w.u8(hard ? 1 : 0)
        return w.bytes
    }
}

/// /dev/rfkill: the kernel's rfkill switches as a stream of events (one `add` per switch on open, then every
/// change), and the place to clear a soft block. Owns its descriptor; a reader thread hands events over.
public final class RfkillDevice: @unchecked Sendable {
    public let events: AsyncThrowingStream<RfkillEvent, any Error>
    private let continuation: AsyncThrowingStream<RfkillEvent, any Error>.Continuation
    private let descriptor: OwnedDescriptor

    public init(path: String = "/dev/rfkill") throws {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw TransportError.fromErrno(errno, "open \(path)") }
        descriptor = try OwnedDescriptor(fd)
        (events, continuation) = AsyncThrowingStream.makeStream(of: RfkillEvent.self)
        continuation.onTermination = { [descriptor] _ in descriptor.close() }
        let thread = Thread { [descriptor, continuation] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer {
                buffer.deallocate()
                descriptor.release()
            }
            do {
                while let n = try descriptor.read(into: buffer), n > 0 {
                    if let e = RfkillEvent.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) {
                        continuation.yield(e)
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "rfkill"
        thread.start()
    }

    deinit { descriptor.close() }

    /// Sets or clears the soft block of one switch (needs write access to /dev/rfkill).
    public func setSoftBlock(index: UInt32, blocked: Bool) throws {
        let e = RfkillEvent(index: index, kind: .bluetooth, operation: .change, soft: blocked, hard: false)
        try descriptor.writeAll(e.bytes, what: "write /dev/rfkill")
    }

    public func close() { descriptor.close() }

    /// The rfkill switch of a kernel adapter: /sys/class/bluetooth/hciN/rfkillM → M (nil: none, or no such adapter).
    public static func index(ofAdapter adapter: String, sysfs: String = "/sys/class/bluetooth") -> UInt32? {
        let dir = "\(sysfs)/\(adapter)"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return nil }
        for n in names where n.hasPrefix("rfkill") {
            if let i = UInt32(n.dropFirst("rfkill".count)) { return i }
        }
        return nil
    }
}
