/// The btsnoop capture format (RFC 1761 "snoop" as adapted by BlueZ and Android; BlueZ
/// `src/shared/btsnoop.h`, Wireshark's btsnoop reader). Everything is big-endian:
///
///     header: "btsnoop\0" | version BE32 = 1 | datalink BE32
///     record: original length BE32 | included length BE32 | flags BE32 | cumulative drops BE32 |
///             timestamp BE64 (microseconds since 0000-01-01 00:00 UTC) | included bytes
///
/// Datalink 1002 (H4): the data starts with the H4 indicator; flags bit 0 = received
/// (controller→host), bit 1 = command or event. Datalink 2001 (Linux monitor): flags are
/// `controller index << 16 | monitor opcode` and the data has no indicator.
public enum Btsnoop {
    public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    public static let version: UInt32 = 1
    public static let headerSize = 16
    public static let recordHeaderSize = 24
    /// Microseconds from 0000-01-01 to 1970-01-01 (BlueZ's and Wireshark's constant).
    public static let unixEpochMicroseconds: UInt64 = 0x00E0_3AB4_4A67_6000

    public struct Datalink: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let h4 = Datalink(rawValue: 1002)
        public static let linuxMonitor = Datalink(rawValue: 2001)
        public var description: String {
            switch self {
            case .h4: "H4 (1002)"
            case .linuxMonitor: "Linux monitor (2001)"
            default: "datalink \(rawValue)"
            }
        }
    }

    public enum Direction: Sendable, Hashable { case sent, received }

    /// One captured packet.
    public struct Record: Sendable, Hashable {
        public var packet: H4Packet
        public var direction: Direction
        /// Microseconds since 1970-01-01.
        public var unixMicroseconds: Int64
        public var cumulativeDrops: UInt32
        /// The adapter index (monitor datalink only).
        public var controllerIndex: UInt16?
    }

    /// Whether `bytes` start like a btsnoop file.
    public static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }

    /// The 16-byte file header.
    public static func header(datalink: Datalink = .h4) -> [UInt8] {
        var w = ByteWriter(capacity: headerSize)
        w.append(magic)
        w.be32(version)
        w.be32(datalink.rawValue)
        return w.bytes
    }

    /// One H4-datalink record.
    public static func record(_ packet: H4Packet, direction: Direction, unixMicroseconds: Int64, drops: UInt32 = 0)
        -> [UInt8]
    {
        let data = packet.h4Bytes
        var flags: UInt32 = direction == .received ? 1 : 0
        if packet.type == .command || packet.type == .event { flags |= 2 }
        var w = ByteWriter(capacity: recordHeaderSize + data.count)
        w.be32(UInt32(data.count))
        w.be32(UInt32(data.count))
        w.be32(flags)
        w.be32(drops)
        w.be64(UInt64(bitPattern: unixMicroseconds &+ Int64(bitPattern: unixEpochMicroseconds)))
        w.append(data)
        return w.bytes
    }
}

/// Reads a btsnoop capture held in memory. A bad header throws `.badCapture`; a truncated final
/// record ends the iteration and is counted in `truncatedRecords`.
public struct BtsnoopReader: Sendable {
    public let datalink: Btsnoop.Datalink
    private var cursor: ByteCursor
    /// Records cut short at the end of the file (a capture interrupted mid-write).
    public private(set) var truncatedRecords = 0
    /// Records whose data could not be a packet (monitor opcodes that carry no HCI packet are not counted).
    public private(set) var skippedRecords = 0

    public init(_ bytes: [UInt8]) throws {
        var c = ByteCursor(bytes)
        guard let magic = c.readBytes(8), magic.elementsEqual(Btsnoop.magic) else {
            throw TransportError(.badCapture, "not a btsnoop file: the first 8 bytes are not \"btsnoop\\0\"")
        }
        guard let version = c.readBE32(), let link = c.readBE32() else {
            throw TransportError(.badCapture, "btsnoop header is truncated (\(bytes.count) bytes)")
        }
        guard version == Btsnoop.version else {
            throw TransportError(.badCapture, "unsupported btsnoop version \(version) (expected 1)")
        }
        let datalink = Btsnoop.Datalink(rawValue: link)
        guard datalink == .h4 || datalink == .linuxMonitor else {
            throw TransportError(
                .badCapture, "unsupported btsnoop \(datalink) (expected 1002 H4 or 2001 Linux monitor)")
        }
        self.datalink = datalink
        self.cursor = c
    }

    /// The next packet record, or nil at the end of the file.
    public mutating func next() -> Btsnoop.Record? {
        while !cursor.isAtEnd {
            let before = cursor
            guard cursor.readBE32() != nil, let included = cursor.readBE32(), let flags = cursor.readBE32(),
                let drops = cursor.readBE32(), let ts = cursor.readBE64(), let data = cursor.readBytes(Int(included))
            else {
                cursor = before
                truncatedRecords += 1
                _ = cursor.readRest()
                return nil
            }
            let micros = Int64(bitPattern: ts &- Btsnoop.unixEpochMicroseconds)
            if datalink == .h4 {
                guard let indicator = data.first, data.count >= 2 else {
                    skippedRecords += 1
                    continue
                }
                return Btsnoop.Record(
                    packet: H4Packet(
                        type: H4PacketType(rawValue: indicator),
                        payload: Array(data.dropFirst())),
                    direction: flags & 1 != 0 ? .received : .sent,
                    unixMicroseconds: micros, cumulativeDrops: drops, controllerIndex: nil)
            }
            // Linux monitor: opcode → (packet type, direction); other opcodes (index events, notes) carry no packet.
            let table: [UInt16: (H4PacketType, Btsnoop.Direction)] = [
                2: (.command, .sent), 3: (.event, .received), 4: (.acl, .sent), 5: (.acl, .received),
                6: (.sco, .sent), 7: (.sco, .received), 18: (.iso, .sent), 19: (.iso, .received),
            ]
            guard let (type, direction) = table[UInt16(flags & 0xFFFF)] else { continue }
            return Btsnoop.Record(
                packet: H4Packet(type: type, payload: Array(data)), direction: direction,
                unixMicroseconds: micros, cumulativeDrops: drops,
                controllerIndex: UInt16(flags >> 16))
        }
        return nil
    }
}
