/// Reads the kernel's monitor channel (HCI_CHANNEL_MONITOR): every read is one message
///
///     opcode LE16 | controller index LE16 | length LE16 | data
///
/// (BlueZ doc/btsnoop.txt and monitor/control.c; the same opcodes are btsnoop datalink 2001's
/// flags). Only one adapter's controller→host events are kept, as H4 event packets, so the layers
/// above decode the very bytes the controller sent; the adapter's removal ends the stream.
struct MonitorFramer: PacketFramer {
    /// Monitor opcodes (BlueZ `monitor/bt.h`, `BTSNOOP_OPCODE_*`); an open set.
    struct Opcode: RawRepresentable, Hashable, Sendable {
        let rawValue: UInt16
        static let newIndex = Opcode(rawValue: 0)
        static let deleteIndex = Opcode(rawValue: 1)
        static let commandPacket = Opcode(rawValue: 2)
        static let eventPacket = Opcode(rawValue: 3)
        static let aclTx = Opcode(rawValue: 4)
        static let aclRx = Opcode(rawValue: 5)
        static let scoTx = Opcode(rawValue: 6)
        static let scoRx = Opcode(rawValue: 7)
        /// The adapter's HCI transport opened (powered on) and closed (powered off, rfkill, `hciconfig down`).
        static let openIndex = Opcode(rawValue: 8)
        static let closeIndex = Opcode(rawValue: 9)
    }

    let index: UInt16
    private(set) var garbageBytes = 0
    var oversizedHeaders: Int { 0 }

    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws -> [H4Packet] {
        var c = ByteCursor(Array(bytes))
        guard let op = c.readLE16(), let idx = c.readLE16(), let len = c.readLE16(),
            let data = c.readBytes(Int(len))
        else {
            garbageBytes += bytes.count
            return []
        }
        guard idx == index else { return [] }
        switch Opcode(rawValue: op) {
        case .eventPacket:
            return [H4Packet(type: .event, payload: Array(data))]
        case .deleteIndex:
            throw TransportError(.closed, errno: noSuchDeviceErrno, "hci\(index) was removed")
        default:
            return []
        }
    }
}

/// ENODEV, spelled without importing Glibc into a pure parser.
let noSuchDeviceErrno: Int32 = 19

extension TransportError {
    /// The end of a shared session because its adapter was removed (the monitor channel's Delete Index).
    public var isAdapterRemoval: Bool { kind == .closed && errno == noSuchDeviceErrno }
}
