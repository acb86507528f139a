import BLETransport

/// The two framings of ESPHome's native API (esphome/components/api/api_frame_helper, aioesphomeapi's
/// `_frame_helper`), without the bytes being copied until a frame is whole.
///
///     plaintext: 0x00 | varint size | varint type | message (size bytes)
///     noise:     0x01 | size (big-endian 16) | payload (size bytes)
public enum ESPHomeFrames {
    /// The first byte of every frame.
    struct Indicator: RawRepresentable, Hashable, Sendable {
        var rawValue: UInt8
        static let plaintext = Self(rawValue: 0x00)
        static let noise = Self(rawValue: 0x01)
    }

    /// The largest message a client may send: ESPHome's noise header cannot say more, and the plaintext
    /// framing is held to the same so a client cannot make the server buffer without bound.
    static let maxMessageBytes = 0xFFFF

    public enum ReadError: Error, Equatable, Sendable, CustomStringConvertible {
        case badIndicator(UInt8)
        /// A plaintext size or type whose varint runs past 5 bytes, or a type past 16 bits.
        case badVarint
        case tooLong(Int)

        public var description: String {
            switch self {
            case .badIndicator(let b): "Bad indicator byte \(b)"
            case .badVarint: "Bad varint"
            case .tooLong(let n): "Frame of \(n) bytes is over the limit of \(ESPHomeFrames.maxMessageBytes)"
            }
        }
    }

    /// A plaintext frame at the cursor: nil while it is not whole.
    static func readPlaintext(_ c: inout ByteCursor) throws(ReadError) -> (ESPHomeMessageType, ArraySlice<UInt8>)? {
        var probe = c
        guard let indicator = probe.readU8() else { return nil }
        guard indicator == Indicator.plaintext.rawValue else { throw .badIndicator(indicator) }
        guard let size = try readVarint(&probe) else { return nil }
        guard size <= maxMessageBytes else { throw .tooLong(Int(size)) }
        guard let type = try readVarint(&probe) else { return nil }
        guard type <= 0xFFFF else { throw .badVarint }
        guard let message = probe.readBytes(Int(size)) else { return nil }
        c = probe
        return (ESPHomeMessageType(rawValue: UInt16(type)), message)
    }

    /// A noise frame's payload at the cursor: nil while it is not whole.
    static func readNoise(_ c: inout ByteCursor) throws(ReadError) -> ArraySlice<UInt8>? {
        var probe = c
        guard let indicator = probe.readU8() else { return nil }
        guard indicator == Indicator.noise.rawValue else { throw .badIndicator(indicator) }
        guard let size = probe.readBE16(), let payload = probe.readBytes(Int(size)) else { return nil }
        c = probe
        return payload
    }

    /// Protobuf's base-128 varint, at most 5 bytes for 32 bits: nil when short.
    static func readVarint(_ c: inout ByteCursor) throws(ReadError) -> UInt32? {
        var value: UInt32 = 0
        for i in 0..<5 {
            guard let b = c.readU8() else { return nil }
            value |= UInt32(b & 0x7F) << (7 * UInt32(i))
            if b & 0x80 == 0 { return value }
        }
        throw .badVarint
    }

    static func appendVarint(_ v: UInt32, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func plaintext(_ type: ESPHomeMessageType, _ message: [UInt8]) -> [UInt8] {
        var out = [Indicator.plaintext.rawValue]
        out.reserveCapacity(message.count + 8)
        appendVarint(UInt32(message.count), to: &out)
        appendVarint(UInt32(type.rawValue), to: &out)
        out += message
        return out
    }

    static func noise(_ payload: [UInt8]) -> [UInt8] {
        precondition(payload.count <= 0xFFFF, "a noise frame holds at most 65,535 bytes")
        return [Indicator.noise.rawValue, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }

    /// Inside an encrypted frame: type and size, big-endian 16 each, then the message.
    static func noiseMessage(_ type: ESPHomeMessageType, _ message: [UInt8]) -> [UInt8] {
        [
            UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), UInt8(message.count >> 8),
            UInt8(message.count & 0xFF),
        ]
            + message
    }
}
