import BLEHCI
import BLETransport

/// The controller's LE ACL data buffers, as the host sees them through flow control
/// (Core v5.4, Vol 4, Part E, §4.1.1): LE Read Buffer Size announces the count, each packet the
/// host sends takes one, and HCI_Number_Of_Completed_Packets (§7.7.19) gives them back.
extension VirtualController {
    /// Total_Num_LE_ACL_Data_Packets, as LE Read Buffer Size [v1]/[v2] report it.
    static let leACLBuffers = 8

    /// Buffers taken by held packets whose link still exists. §4.3: after Disconnection Complete
    /// the host counts that handle's packets as flushed, so a lost link frees its buffers.
    var buffersInUse: Int {
        heldACL.reduce(0) { n, p in connections[Self.aclHandle(p)] != nil ? n + 1 : n }
    }

    /// The end of `buffer_exhaustion`: the held packets go to their peers in order, then every
    /// handle's credits come back in one Number Of Completed Packets event each (handles in
    /// ascending order), followed by the peers' answers. Packets of links gone meanwhile are
    /// dropped without credit, as §4.3 says the host already reclaimed them.
    mutating func releaseACL(now: Double, silence: GATTSilence = GATTSilence()) -> [[UInt8]] {
        let held = heldACL
        heldACL = []
        var completed: [UInt16: UInt16] = [:]
        var answers: [[UInt8]] = []
        for p in held where connections[Self.aclHandle(p)] != nil {
            completed[Self.aclHandle(p), default: 0] += 1
            answers += deliverToPeer(p, now: now, silence: silence).events
        }
        let credits = completed.keys.sorted().map {
            SimEvents.numberOfCompletedPackets(handle: $0, count: completed[$0]!)
        }
        return credits + answers
    }

    /// Connection_Handle of a host ACL packet (§5.4.2: the low 12 bits of the first two octets).
    static func aclHandle(_ payload: [UInt8]) -> UInt16 {
        var c = ByteCursor(payload)
        return (c.readLE16() ?? 0xFFFF) & 0x0FFF
    }
}
