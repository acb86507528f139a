import BLEHCI
import BLEHost
import BLETransport

/// The LE links' hot path without I/O: ATT PDUs cut into ACL fragments by the scheduler (credit taken and returned
/// on every packet, four links taking turns), and the same fragments joined again by the reassembler.
/// Prints frames per second for 27-octet buffers (a controller without Data Length Extension) and 251-octet ones.
/// Usage: blegateway-bench links [-- --frames N]
func runLinksBenchmark(args: [String]) {
    let frames = benchmarkOption(args, "--frames", 200_000)
    let clock = ContinuousClock()
    // A Handle Value Notification at ATT_MTU 247: opcode, handle, 244 octets of value.
    let frame = L2CAPFrame(channel: .att, payload: [0x1B, 0x06, 0x00] + [UInt8](repeating: 0x5A, count: 244)).bytes
    for bufferLength in [27, 251] {
        var scheduler = ACLScheduler(bufferLength: bufferLength, bufferCount: 8, queueLimit: 1 << 20)
        var reassembler = ACLReassembler()
        var packets: [H4Packet] = []
        packets.reserveCapacity(frames * (frame.count / bufferLength + 1))
        let start = clock.now
        for i in 0..<frames {
            _ = scheduler.enqueue(frame, handle: UInt16(0x40 + i % 4))
            for p in scheduler.nextPackets() {
                scheduler.completed([completion(p)])
                packets.append(p)
            }
        }
        while scheduler.queued > 0 {
            for p in scheduler.nextPackets() {
                scheduler.completed([completion(p)])
                packets.append(p)
            }
        }
        let scheduled = (clock.now - start).seconds
        var joined = 0
        let start2 = clock.now
        for p in packets {
            guard let acl = ACLDataPacket.parse(p.payload[...]) else { fatalError("scheduler built a bad packet") }
            if reassembler.receive(acl) != nil { joined += 1 }
        }
        let reassembled = (clock.now - start2).seconds
        precondition(joined == frames, "lost frames: \(joined) of \(frames)")
        print(
            "links.schedule_247_octet_frames_buffer_\(bufferLength): \(Int(Double(frames) / scheduled)) frames/s "
                + "(\(packets.count / frames) packets each)")
        print("links.reassemble_247_octet_frames_buffer_\(bufferLength): \(Int(Double(frames) / reassembled)) frames/s")
    }
}

/// One Number Of Completed Packets entry for `p`, as the controller would send it, parsed from its bytes.
private func completion(_ p: H4Packet) -> HCIEvent.CompletedPackets {
    let bytes: [UInt8] = [0x13, 0x05, 0x01, p.payload[0], p.payload[1] & 0x0F, 0x01, 0x00]
    guard case .numberOfCompletedPackets(let e)? = HCIEvent.parse(bytes[...]) else { fatalError("vector") }
    return e[0]
}
