import BLEHCI
import BLETransport

/// Joins the ACL fragments a controller delivers into whole L2CAP basic frames, per connection handle.
///
/// Core v5.4, Vol 4, Part E, §5.4.2: Packet_Boundary_Flag 0b10 ("first automatically flushable packet") or 0b00
/// starts a higher-layer message and 0b01 continues it. Vol 3, Part A, §7.2: L2CAP learns a frame's end from its
/// Length field (§3.1), so the frame is whole once 4 + Length octets have arrived.
///
/// A state machine with no I/O. Bad input is counted and dropped, never trapped on:
/// a continuation with no frame open, a new start while a frame is open (the partial one is dropped),
/// more octets than Length announced, a frame over `maximumFrameSize`, reserved flags.
public struct ACLReassembler: Sendable {
    public struct Counters: Sendable, Hashable {
        /// Whole frames handed on.
        public var frames = 0
        /// Fragments that were not first fragments (0b01) accepted into an open frame.
        public var continuations = 0
        /// 0b01 with no frame open on that handle (§7.2.1: the fragment is discarded).
        public var orphanContinuations = 0
        /// A start (0b00/0b10) arrived while a frame was still open: the partial frame was dropped.
        public var interruptedFrames = 0
        /// More octets arrived than 4 + Length: the frame was dropped.
        public var overlongFrames = 0
        /// Length announced a frame over the bound: dropped with its continuations.
        public var oversizedFrames = 0
        /// Packet_Boundary_Flag 0b11 or a Broadcast_Flag other than 0b00 (neither is used on LE-U).
        public var reservedFlags = 0
        /// Partial frames dropped because their link ended.
        public var abandonedFrames = 0
        public init() {}
    }

    /// One partial frame. `expected` is 4 + Length once the first two octets are in.
    private struct Partial: Sendable {
        var bytes: [UInt8]
        var expected: Int?
        /// Set for a frame over the bound: its continuations are swallowed until the next start.
        var discarding: Bool
    }

    /// The largest whole basic frame accepted (header included).
    public let maximumFrameSize: Int
    public private(set) var counters = Counters()
    private var open: [UInt16: Partial] = [:]

    /// - Parameter maximumFrameSize: the bound on 4 + Length. The default fits the largest ATT_MTU this host
    ///   uses (517: a 512-octet attribute value, Vol 3, Part F, §3.2.9, plus the largest PDU header).
    public init(maximumFrameSize: Int = L2CAPFrame.headerSize + 517) {
        self.maximumFrameSize = maximumFrameSize
    }

    /// Handles with a partial frame waiting.
    public var openHandles: Set<UInt16> { Set(open.keys) }

    /// Takes one ACL data packet; returns a frame when this packet completed one.
    public mutating func receive(_ packet: ACLDataPacket) -> (handle: UInt16, frame: L2CAPFrame)? {
        let handle = packet.header.handle
        guard packet.header.broadcast == 0, packet.header.packetBoundary.rawValue != 0b11 else {
            counters.reservedFlags += 1
            return nil
        }
        var partial: Partial
        if packet.header.packetBoundary == .continuing {
            guard let p = open[handle] else {
                counters.orphanContinuations += 1
                return nil
            }
            partial = p
            if partial.discarding { return nil }
            counters.continuations += 1
            partial.bytes.append(contentsOf: packet.data)
        } else {
            if let old = open.removeValue(forKey: handle), !old.discarding { counters.interruptedFrames += 1 }
            partial = Partial(bytes: Array(packet.data), expected: nil, discarding: false)
        }
        return advance(partial, handle: handle)
    }

    /// The link ended (Disconnection Complete): its partial frame goes.
    public mutating func remove(handle: UInt16) {
        if let p = open.removeValue(forKey: handle), !p.discarding { counters.abandonedFrames += 1 }
    }

    private mutating func advance(_ p: Partial, handle: UInt16) -> (handle: UInt16, frame: L2CAPFrame)? {
        var partial = p
        if partial.expected == nil, partial.bytes.count >= 2 {
            var c = ByteCursor(partial.bytes)
            partial.expected = L2CAPFrame.headerSize + Int(c.readLE16()!)
        }
        guard let expected = partial.expected else {
            open[handle] = partial  // the Length field itself was split
            return nil
        }
        if expected > maximumFrameSize {
            counters.oversizedFrames += 1
            open[handle] = Partial(bytes: [], expected: expected, discarding: true)
            return nil
        }
        if partial.bytes.count > expected {
            counters.overlongFrames += 1
            open[handle] = nil
            return nil
        }
        guard partial.bytes.count == expected, let frame = L2CAPFrame.parse(partial.bytes[...]) else {
            open[handle] = partial
            return nil
        }
        open[handle] = nil
        counters.frames += 1
        return (handle, frame)
    }
}
