import BLETransport
import Foundation

/// The GATT server of a simulated sensor peripheral, over ATT (Core v5.4, Vol 3, Part F and G).
///
/// A fixed database: GAP (0x1800) with Device Name, and Environmental Sensing (0x181A) with
/// Temperature (0x2A6E, sint16 in 0.01 °C) and Humidity (0x2A6F, uint16 in 0.01 %), both readable
/// and notifiable, each with a Client Characteristic Configuration descriptor (0x2902).
/// A value type with no I/O: `handle(request:now:)` returns the response PDU.
public struct SimGATTServer: Sendable {
    public struct Attribute: Sendable {
        public var handle: UInt16
        public var type: UInt16  // all 16-bit UUIDs in this database
        public var value: [UInt8]
    }

    /// ATT opcodes (Vol 3, Part F, §3.4.8).
    public enum Op {
        public static let error: UInt8 = 0x01
        public static let mtuRequest: UInt8 = 0x02, mtuResponse: UInt8 = 0x03
        public static let findInformationRequest: UInt8 = 0x04, findInformationResponse: UInt8 = 0x05
        public static let readByTypeRequest: UInt8 = 0x08, readByTypeResponse: UInt8 = 0x09
        public static let readRequest: UInt8 = 0x0A, readResponse: UInt8 = 0x0B
        public static let readByGroupTypeRequest: UInt8 = 0x10, readByGroupTypeResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12, writeResponse: UInt8 = 0x13
        public static let notification: UInt8 = 0x1B
        public static let writeCommand: UInt8 = 0x52
    }

    /// ATT error codes (§3.4.1.1).
    public enum ATTError {
        public static let invalidHandle: UInt8 = 0x01
        public static let readNotPermitted: UInt8 = 0x02
        public static let writeNotPermitted: UInt8 = 0x03
        public static let invalidPDU: UInt8 = 0x04
        public static let requestNotSupported: UInt8 = 0x06
        public static let attributeNotFound: UInt8 = 0x0A
        public static let invalidAttributeValueLength: UInt8 = 0x0D
        public static let unsupportedGroupType: UInt8 = 0x10
    }

    public static let temperatureHandle: UInt16 = 0x0006
    public static let humidityHandle: UInt16 = 0x0009
    static let cccdFor: [UInt16: UInt16] = [0x0007: 0x0006, 0x000A: 0x0009]

    public private(set) var attributes: [Attribute]
    public private(set) var mtu: Int = 23
    /// Value handles whose CCCD has notifications enabled.
    public private(set) var notifying: Set<UInt16> = []
    /// A per-device phase so sensors do not read alike.
    let phase: Double

    public init(deviceName: String, phase: Double) {
        self.phase = phase
        func decl(_ props: UInt8, _ valueHandle: UInt16, _ uuid: UInt16) -> [UInt8] {
            [props, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8), UInt8(uuid & 0xFF), UInt8(uuid >> 8)]
        }
        attributes = [
            Attribute(handle: 0x0001, type: 0x2800, value: [0x00, 0x18]),
            Attribute(handle: 0x0002, type: 0x2803, value: decl(0x02, 0x0003, 0x2A00)),
            Attribute(handle: 0x0003, type: 0x2A00, value: Array(deviceName.utf8.prefix(20))),
            Attribute(handle: 0x0004, type: 0x2800, value: [0x1A, 0x18]),
            Attribute(handle: 0x0005, type: 0x2803, value: decl(0x12, 0x0006, 0x2A6E)),  // read | notify
            Attribute(handle: 0x0006, type: 0x2A6E, value: []),
            Attribute(handle: 0x0007, type: 0x2902, value: [0, 0]),
            Attribute(handle: 0x0008, type: 0x2803, value: decl(0x12, 0x0009, 0x2A6F)),
            Attribute(handle: 0x0009, type: 0x2A6F, value: []),
            Attribute(handle: 0x000A, type: 0x2902, value: [0, 0]),
        ]
    }

    /// Sensor values at virtual time `t`: a slow daily-ish swing around 21.5 °C and 45 %.
    public func value(of handle: UInt16, at t: Double) -> [UInt8] {
        switch handle {
        case Self.temperatureHandle:
            let v = Int16((21.5 + 1.5 * sin(t / 600 + phase)) * 100)
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        case Self.humidityHandle:
            let v = UInt16((45 + 5 * sin(t / 900 + phase)) * 100)
            return [UInt8(v & 0xFF), UInt8(v >> 8)]
        default:
            return attributes.first { $0.handle == handle }?.value ?? []
        }
    }

    static func error(_ request: UInt8, _ handle: UInt16, _ code: UInt8) -> [UInt8] {
        [Op.error, request, UInt8(handle & 0xFF), UInt8(handle >> 8), code]
    }

    /// Answers one ATT PDU; nil for commands (no response) and for PDUs the server ignores.
    public mutating func handle(request pdu: [UInt8], now t: Double) -> [UInt8]? {
        var c = ByteCursor(pdu)
        guard let op = c.readU8() else { return nil }
        switch op {
        case Op.mtuRequest:  // Client Rx MTU(2) → Server Rx MTU(2)
            guard let client = c.readLE16() else { return Self.error(op, 0, ATTError.invalidPDU) }
            mtu = max(23, min(Int(client), 247))
            return [Op.mtuResponse, 247, 0]
        case Op.readByGroupTypeRequest:  // Start(2) End(2) Group Type(2 or 16)
            guard let start = c.readLE16(), let end = c.readLE16(), let type = c.readLE16(), start != 0, start <= end else {
                return Self.error(op, 0, ATTError.invalidHandle)
            }
            guard type == 0x2800 else { return Self.error(op, start, ATTError.unsupportedGroupType) }
            let services = attributes.filter { $0.type == 0x2800 && $0.handle >= start && $0.handle <= end }
            guard !services.isEmpty else { return Self.error(op, start, ATTError.attributeNotFound) }
            var out: [UInt8] = [Op.readByGroupTypeResponse, 6]
            for s in services where out.count + 6 <= mtu {
                let groupEnd = attributes.first { $0.type == 0x2800 && $0.handle > s.handle }.map { $0.handle - 1 } ?? 0xFFFF
                out += le(s.handle) + le(groupEnd) + s.value
            }
            return out
        case Op.readByTypeRequest:  // Start(2) End(2) Type(2)
            guard let start = c.readLE16(), let end = c.readLE16(), let type = c.readLE16(), start != 0, start <= end else {
                return Self.error(op, 0, ATTError.invalidHandle)
            }
            let found = attributes.filter { $0.type == type && $0.handle >= start && $0.handle <= end }
            guard let first = found.first else { return Self.error(op, start, ATTError.attributeNotFound) }
            let len = 2 + value(of: first.handle, at: t).count
            var out: [UInt8] = [Op.readByTypeResponse, UInt8(len)]
            for a in found where out.count + len <= mtu {
                let v = value(of: a.handle, at: t)
                guard v.count + 2 == len else { break }  // one length per response
                out += le(a.handle) + v
            }
            return out
        case Op.findInformationRequest:  // Start(2) End(2) → Format 1 (16-bit UUIDs), handle–UUID pairs
            guard let start = c.readLE16(), let end = c.readLE16(), start != 0, start <= end else {
                return Self.error(op, 0, ATTError.invalidHandle)
            }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end }
            guard !found.isEmpty else { return Self.error(op, start, ATTError.attributeNotFound) }
            var out: [UInt8] = [Op.findInformationResponse, 0x01]
            for a in found where out.count + 4 <= mtu { out += le(a.handle) + le(a.type) }
            return out
        case Op.readRequest:
            guard let h = c.readLE16() else { return Self.error(op, 0, ATTError.invalidPDU) }
            guard attributes.contains(where: { $0.handle == h }) else { return Self.error(op, h, ATTError.invalidHandle) }
            return [Op.readResponse] + value(of: h, at: t).prefix(mtu - 1)
        case Op.writeRequest, Op.writeCommand:
            guard let h = c.readLE16() else { return op == Op.writeRequest ? Self.error(op, 0, ATTError.invalidPDU) : nil }
            let v = Array(c.readRest())
            guard let target = Self.cccdFor[h] else {
                guard op == Op.writeRequest else { return nil }
                let exists = attributes.contains { $0.handle == h }
                return Self.error(op, h, exists ? ATTError.writeNotPermitted : ATTError.invalidHandle)
            }
            guard v.count == 2 else {
                return op == Op.writeRequest ? Self.error(op, h, ATTError.invalidAttributeValueLength) : nil
            }
            if let i = attributes.firstIndex(where: { $0.handle == h }) { attributes[i].value = v }
            if v[0] & 0x01 != 0 { notifying.insert(target) } else { notifying.remove(target) }
            return op == Op.writeRequest ? [Op.writeResponse] : nil
        default:
            // Commands (bit 6 set) are ignored; unsupported requests get Request Not Supported.
            return op & 0x40 != 0 ? nil : Self.error(op, 0, ATTError.requestNotSupported)
        }
    }

    /// Handle Value Notifications due at `t` for the subscribed characteristics.
    public func notifications(at t: Double) -> [[UInt8]] {
        notifying.sorted().map { [Op.notification] + le($0) + value(of: $0, at: t) }
    }
}

@inline(__always) func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
