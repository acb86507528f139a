import BLEHCI
import BLETransport

/// The host's side of LE ACL flow control (Core v5.4, Vol 4, Part E, §4.1.1): the one owner of the controller's
/// LE ACL buffer credit.
///
/// LE Read Buffer Size (§7.8.2) gives LE_ACL_Data_Packet_Length (the most octets one packet may carry) and
/// Total_Num_LE_ACL_Data_Packets (how many may sit in the controller). Each packet sent takes one buffer;
/// Number Of Completed Packets (§7.7.19) gives them back. §4.3: after Disconnection Complete the host shall
/// consider the handle's unacknowledged packets flushed, so their buffers come back too.
///
/// L2CAP frames are cut into fragments of at most the buffer length (§5.4.2: the first with
/// Packet_Boundary_Flag 0b00, "first non-automatically-flushable", which is what the host uses on LE-U; the rest
/// 0b01) and queued per handle. `nextPackets()` hands out fragments while credit remains, one per handle in turn,
/// so one busy link does not starve the others. A state machine with no I/O: the caller sends what it returns.
public struct ACLScheduler: Sendable {
    public struct Counters: Sendable, Hashable {
        /// ACL packets handed out to be sent.
        public var sent = 0
        /// L2CAP frames accepted into a queue.
        public var framesQueued = 0
        /// Frames refused because their link's queue was full.
        public var framesRejected = 0
        /// Times the scheduler had fragments waiting and no credit left (counted once per stall, not per try).
        public var stalls = 0
        /// Queued fragments dropped because their link ended.
        public var droppedOnDisconnect = 0
        /// Credits returned by Disconnection Complete for packets the controller never acknowledged (§4.3).
        public var creditsReclaimed = 0
        /// Completed packets reported for a handle with fewer packets in flight (ignored beyond those).
        public var unexpectedCompletions = 0
        public init() {}
    }

    public enum EnqueueResult: Sendable, Hashable {
        case queued(fragments: Int)
        /// The link's queue holds `queueLimit` fragments already; nothing was queued.
        case queueFull
    }

    /// LE_ACL_Data_Packet_Length: the most octets of L2CAP data in one ACL packet.
    public let bufferLength: Int
    /// Total_Num_LE_ACL_Data_Packets.
    public let bufferCount: Int
    /// The most fragments one link may have waiting.
    public let queueLimit: Int
    public private(set) var counters = Counters()
    /// Buffers free in the controller.
    public private(set) var credits: Int

    private struct Link: Sendable {
        var queue: [H4Packet] = []
        var head = 0
        var inFlight = 0
        var waiting: Int { queue.count - head }

        /// Mutated in place in `links` (never copied out and back): a copy would share `queue`'s storage and the
        /// next append would copy every waiting fragment.
        mutating func append(_ fragments: [H4Packet]) {
            if head > 0 && head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= queue.count {
                // Sent fragments are let go once they are half the queue: amortised O(1), memory bounded.
                queue.removeFirst(head)
                head = 0
            }
            queue += fragments
        }

        mutating func take() -> H4Packet {
            let p = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            inFlight += 1
            return p
        }
    }
    private var links: [UInt16: Link] = [:]
    /// Handles in the order they take turns; `turn` is the next to be served.
    private var order: [UInt16] = []
    private var turn = 0
    private var stalled = false

    public init(bufferLength: Int, bufferCount: Int, queueLimit: Int = 256) {
        precondition(bufferLength > 0 && bufferCount > 0, "LE ACL buffers must have a length and a count")
        self.bufferLength = bufferLength
        self.bufferCount = bufferCount
        self.queueLimit = queueLimit
        self.credits = bufferCount
    }

    /// Packets sent and not yet completed, over all links.
    public var inFlight: Int { bufferCount - credits }
    /// Fragments waiting, over all links.
    public var queued: Int { links.values.reduce(0) { $0 + $1.waiting } }
    public func inFlight(handle: UInt16) -> Int { links[handle]?.inFlight ?? 0 }
    public func queued(handle: UInt16) -> Int { links[handle]?.waiting ?? 0 }

    /// Cuts a whole L2CAP frame into fragments and queues them for `handle`, all or none.
    public mutating func enqueue(_ frame: [UInt8], handle: UInt16) -> EnqueueResult {
        let h = handle & 0x0FFF
        var fragments: [H4Packet] = []
        var start = 0
        repeat {
            let end = min(start + bufferLength, frame.count)
            fragments.append(
                ACLDataPacket.build(
                    handle: h, packetBoundary: start == 0 ? .firstNonFlushable : .continuing, data: frame[start..<end]))
            start = end
        } while start < frame.count
        guard (links[h]?.waiting ?? 0) + fragments.count <= queueLimit else {
            counters.framesRejected += 1
            return .queueFull
        }
        if links[h] == nil {
            order.append(h)
            links[h] = Link()
        }
        links[h]!.append(fragments)
        counters.framesQueued += 1
        return .queued(fragments: fragments.count)
    }

    /// The packets to send now, in order: while credit remains, one fragment from each handle with data in turn.
    public mutating func nextPackets() -> [H4Packet] {
        var out: [H4Packet] = []
        var idle = 0  // handles passed in a row with nothing waiting
        while credits > 0, !order.isEmpty, idle < order.count {
            if turn >= order.count { turn = 0 }
            let h = order[turn]
            turn += 1
            guard let waiting = links[h]?.waiting, waiting > 0 else {
                idle += 1
                continue
            }
            idle = 0
            out.append(links[h]!.take())
            credits -= 1
        }
        counters.sent += out.count
        let waiting = credits == 0 && queued > 0
        if waiting && !stalled { counters.stalls += 1 }
        stalled = waiting
        return out
    }

    /// Number Of Completed Packets: the controller freed buffers. Call `nextPackets()` afterwards.
    public mutating func completed(_ entries: [HCIEvent.CompletedPackets]) {
        for e in entries {
            let h = e.handle & 0x0FFF
            let n = Int(e.count)
            let inFlight = links[h]?.inFlight ?? 0
            let taken = min(n, inFlight)
            if n > taken { counters.unexpectedCompletions += n - taken }
            if taken > 0 { links[h]!.inFlight -= taken }
            credits += taken
        }
    }

    /// Disconnection Complete: the handle's queue is dropped and its unacknowledged packets' credit returns
    /// (§4.3). Returns the number of fragments dropped. Call `nextPackets()` afterwards.
    @discardableResult
    public mutating func disconnected(handle: UInt16) -> Int {
        let h = handle & 0x0FFF
        guard let link = links.removeValue(forKey: h) else { return 0 }
        if let i = order.firstIndex(of: h) {
            order.remove(at: i)
            if turn > i { turn -= 1 }
        }
        credits += link.inFlight
        counters.creditsReclaimed += link.inFlight
        counters.droppedOnDisconnect += link.waiting
        return link.waiting
    }
}
