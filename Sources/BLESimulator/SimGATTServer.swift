import BLETransport
import Foundation

/// The GATT server of a simulated sensor peripheral, over ATT (Core v5.4, Vol 3, Part F and G).
///
/// A fixed database (all 16-bit UUIDs), one per link. Handles never move, so tests and the
/// gateway's docs can name them:
///
/// | handle | attribute | value / properties |
/// |---|---|---|
/// | 0x0001 | Primary Service 0x1800 GAP | |
/// | 0x0002–0x0003 | Device Name 0x2A00 | read; the local name, up to 40 bytes (Read Blob past MTU−1) |
/// | 0x0004 | Primary Service 0x181A Environmental Sensing | |
/// | 0x0005–0x0006 | Temperature 0x2A6E | read, notify; sint16 0.01 °C |
/// | 0x0007 | CCCD of Temperature | |
/// | 0x0008–0x0009 | Humidity 0x2A6F | read, notify; uint16 0.01 % |
/// | 0x000A | CCCD of Humidity | |
/// | 0x000B | Primary Service 0x1801 GATT | |
/// | 0x000C–0x000D | Service Changed 0x2A05 | indicate; Start(2) End(2) of the changed range |
/// | 0x000E | CCCD of Service Changed | |
/// | 0x000F | Primary Service 0x180F Battery | |
/// | 0x0010–0x0011 | Battery Level 0x2A19 | read, indicate (no notify); uint8 %, 1 % per 6 min |
/// | 0x0012 | CCCD of Battery Level | |
/// | 0x0013 | Primary Service 0x1802 Immediate Alert | |
/// | 0x0014–0x0015 | Alert Level 0x2A06 | read, write, write without response; uint8 0..2 |
/// | 0x0016 | Primary Service 0x180A Device Information | |
/// | 0x0017–0x0018 | Manufacturer Name 0x2A29 | read; "BLEGateway Simulated Sensors Ltd" (32 bytes) |
/// | 0x0019–0x001A | Model Number 0x2A24 | read; "SIM-ENV-1" |
/// | 0x001B | Primary Service 0x1804 Tx Power | only after `gatt_change_at_s` ("grown") |
/// | 0x001C–0x001D | Tx Power Level 0x2A07 | read; sint8 dBm (0) |
///
/// A value type with no I/O: `handle(request:now:)` returns the response PDU; the link asks for
/// due notifications and indications and sends them.
public struct SimGATTServer: Sendable {
    public struct Attribute: Sendable {
        public var handle: UInt16
        public var type: UInt16  // all 16-bit UUIDs in this database
        public var value: [UInt8]
    }

    /// A characteristic value the client wrote, in arrival order (tests read it).
    public struct Write: Sendable, Hashable {
        public var handle: UInt16
        public var value: [UInt8]
        /// Write Command (no response) rather than Write Request.
        public var command: Bool
    }

    /// ATT opcodes (Vol 3, Part F, §3.4.8).
    public enum Op {
        public static let error: UInt8 = 0x01
        public static let mtuRequest: UInt8 = 0x02, mtuResponse: UInt8 = 0x03
        public static let findInformationRequest: UInt8 = 0x04, findInformationResponse: UInt8 = 0x05
        public static let readByTypeRequest: UInt8 = 0x08, readByTypeResponse: UInt8 = 0x09
        public static let readRequest: UInt8 = 0x0A, readResponse: UInt8 = 0x0B
        public static let readBlobRequest: UInt8 = 0x0C, readBlobResponse: UInt8 = 0x0D
        public static let readByGroupTypeRequest: UInt8 = 0x10, readByGroupTypeResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12, writeResponse: UInt8 = 0x13
        public static let notification: UInt8 = 0x1B
        public static let indication: UInt8 = 0x1D, confirmation: UInt8 = 0x1E
        public static let writeCommand: UInt8 = 0x52
    }

    /// ATT error codes (§3.4.1.1).
    public enum ATTError {
        public static let invalidHandle: UInt8 = 0x01
        public static let readNotPermitted: UInt8 = 0x02
        public static let writeNotPermitted: UInt8 = 0x03
        public static let invalidPDU: UInt8 = 0x04
        public static let requestNotSupported: UInt8 = 0x06
        public static let invalidOffset: UInt8 = 0x07
        public static let attributeNotFound: UInt8 = 0x0A
        public static let invalidAttributeValueLength: UInt8 = 0x0D
        public static let unsupportedGroupType: UInt8 = 0x10
        public static let valueNotAllowed: UInt8 = 0x13
    }

    public static let deviceNameHandle: UInt16 = 0x0003
    public static let temperatureHandle: UInt16 = 0x0006
    public static let humidityHandle: UInt16 = 0x0009
    public static let serviceChangedHandle: UInt16 = 0x000D
    public static let batteryLevelHandle: UInt16 = 0x0011
    public static let alertLevelHandle: UInt16 = 0x0015
    public static let manufacturerNameHandle: UInt16 = 0x0018
    public static let modelNumberHandle: UInt16 = 0x001A
    public static let txPowerLevelHandle: UInt16 = 0x001D
    public static let manufacturerName = "BLEGateway Simulated Sensors Ltd"

    /// Characteristic properties (Vol 3, Part G, §3.3.1.1).
    enum Prop {
        static let read: UInt8 = 0x02, writeWithoutResponse: UInt8 = 0x04, write: UInt8 = 0x08
        static let notify: UInt8 = 0x10, indicate: UInt8 = 0x20
    }

    /// CCCD handle → (value handle, may notify, may indicate).
    static let cccdFor: [UInt16: (value: UInt16, notify: Bool, indicate: Bool)] = [
        0x0007: (0x0006, true, false), 0x000A: (0x0009, true, false),
        0x000E: (0x000D, false, true), 0x0012: (0x0011, false, true),
    ]

    public private(set) var attributes: [Attribute]
    public private(set) var mtu: Int = 23
    /// Value handles whose CCCD has notifications enabled (bit 0 of the CCCD value).
    public private(set) var notifying: Set<UInt16> = []
    /// Value handles whose CCCD has indications enabled (bit 1, Vol 3, Part G, §3.3.3.3).
    public private(set) var indicating: Set<UInt16> = []
    /// Value handles with an indication to send, oldest first (each at most once).
    public private(set) var pendingIndications: [UInt16] = []
    /// Whether an indication is out and its Handle Value Confirmation has not come back.
    public private(set) var awaitingConfirmation = false
    public private(set) var confirmationsReceived = 0
    public private(set) var indicationsSent = 0
    /// Characteristic-value writes the server accepted, in order.
    public private(set) var writes: [Write] = []
    /// Whether the Tx Power service (0x001B–0x001D) has been added (`gatt_change_at_s`).
    public private(set) var grown = false
    /// A per-device phase so sensors do not read alike.
    let phase: Double

    public init(deviceName: String, phase: Double, grown: Bool = false) {
        self.phase = phase
        func decl(_ props: UInt8, _ valueHandle: UInt16, _ uuid: UInt16) -> [UInt8] {
            [props] + le(valueHandle) + le(uuid)
        }
        attributes = [
            Attribute(handle: 0x0001, type: 0x2800, value: le(0x1800)),
            Attribute(handle: 0x0002, type: 0x2803, value: decl(Prop.read, 0x0003, 0x2A00)),
            Attribute(handle: 0x0003, type: 0x2A00, value: Array(deviceName.utf8.prefix(40))),
            Attribute(handle: 0x0004, type: 0x2800, value: le(0x181A)),
            Attribute(handle: 0x0005, type: 0x2803, value: decl(Prop.read | Prop.notify, 0x0006, 0x2A6E)),
            Attribute(handle: 0x0006, type: 0x2A6E, value: []),
            Attribute(handle: 0x0007, type: 0x2902, value: [0, 0]),
            Attribute(handle: 0x0008, type: 0x2803, value: decl(Prop.read | Prop.notify, 0x0009, 0x2A6F)),
            Attribute(handle: 0x0009, type: 0x2A6F, value: []),
            Attribute(handle: 0x000A, type: 0x2902, value: [0, 0]),
            Attribute(handle: 0x000B, type: 0x2800, value: le(0x1801)),
            Attribute(handle: 0x000C, type: 0x2803, value: decl(Prop.indicate, 0x000D, 0x2A05)),
            // Service Changed is indicate-only: a read is Read Not Permitted (Vol 3, Part G, §7.1).
            Attribute(handle: 0x000D, type: 0x2A05, value: le(0x0001) + le(0xFFFF)),
            Attribute(handle: 0x000E, type: 0x2902, value: [0, 0]),
            Attribute(handle: 0x000F, type: 0x2800, value: le(0x180F)),
            Attribute(handle: 0x0010, type: 0x2803, value: decl(Prop.read | Prop.indicate, 0x0011, 0x2A19)),
            Attribute(handle: 0x0011, type: 0x2A19, value: []),
            Attribute(handle: 0x0012, type: 0x2902, value: [0, 0]),
            Attribute(handle: 0x0013, type: 0x2800, value: le(0x1802)),
            Attribute(
                handle: 0x0014, type: 0x2803,
                value: decl(Prop.read | Prop.write | Prop.writeWithoutResponse, 0x0015, 0x2A06)),
            Attribute(handle: 0x0015, type: 0x2A06, value: [0x00]),
            Attribute(handle: 0x0016, type: 0x2800, value: le(0x180A)),
            Attribute(handle: 0x0017, type: 0x2803, value: decl(Prop.read, 0x0018, 0x2A29)),
            Attribute(handle: 0x0018, type: 0x2A29, value: Array(Self.manufacturerName.utf8)),
            Attribute(handle: 0x0019, type: 0x2803, value: decl(Prop.read, 0x001A, 0x2A24)),
            Attribute(handle: 0x001A, type: 0x2A24, value: Array("SIM-ENV-1".utf8)),
        ]
        if grown { addTxPowerService() }
    }

    private mutating func addTxPowerService() {
        guard !grown else { return }
        grown = true
        attributes += [
            Attribute(handle: 0x001B, type: 0x2800, value: le(0x1804)),
            Attribute(handle: 0x001C, type: 0x2803, value: [Prop.read] + le(0x001D) + le(0x2A07)),
            Attribute(handle: 0x001D, type: 0x2A07, value: [0x00]),
        ]
    }

    /// The database grows by the Tx Power service. Vol 3, Part G, §7.1: the server tells a client
    /// that configured the Service Changed CCCD for indications with an indication whose value is
    /// the affected range, Start(2) End(2) = 0x001B–0x001D. Returns whether an indication was queued.
    @discardableResult
    public mutating func grow() -> Bool {
        guard !grown else { return false }
        addTxPowerService()
        setValue(of: Self.serviceChangedHandle, le(0x001B) + le(0x001D))
        guard indicating.contains(Self.serviceChangedHandle) else { return false }
        queueIndication(Self.serviceChangedHandle)
        return true
    }

    private mutating func setValue(of handle: UInt16, _ v: [UInt8]) {
        if let i = attributes.firstIndex(where: { $0.handle == handle }) { attributes[i].value = v }
    }

    /// Sensor values at virtual time `t`: a slow daily-ish swing around 21.5 °C and 45 %; the
    /// battery drains 1 % every 6 minutes from 100 %.
    public func value(of handle: UInt16, at t: Double) -> [UInt8] {
        switch handle {
        case Self.temperatureHandle:
            let v = Int16((21.5 + 1.5 * sin(t / 600 + phase)) * 100)
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        case Self.humidityHandle:
            let v = UInt16((45 + 5 * sin(t / 900 + phase)) * 100)
            return [UInt8(v & 0xFF), UInt8(v >> 8)]
        case Self.batteryLevelHandle:
            return [UInt8(max(0, 100 - Int(max(0, t) / 360)))]
        default:
            return attributes.first { $0.handle == handle }?.value ?? []
        }
    }

    /// Properties of the characteristic whose value is at `handle`, nil if `handle` is not a value.
    func properties(ofValue handle: UInt16) -> UInt8? {
        guard handle > 1, let d = attributes.first(where: { $0.type == 0x2803 && $0.handle == handle - 1 }) else {
            return nil
        }
        return d.value[0]
    }

    static func error(_ request: UInt8, _ handle: UInt16, _ code: UInt8) -> [UInt8] {
        [Op.error, request] + le(handle) + [code]
    }

    /// Answers one ATT PDU; nil for commands and confirmations (no response) and PDUs the server ignores.
    public mutating func handle(request pdu: [UInt8], now t: Double) -> [UInt8]? {
        var c = ByteCursor(pdu)
        guard let op = c.readU8() else { return nil }
        switch op {
        case Op.mtuRequest:  // Client Rx MTU(2) → Server Rx MTU(2)
            guard let client = c.readLE16() else { return Self.error(op, 0, ATTError.invalidPDU) }
            mtu = max(23, min(Int(client), 247))
            return [Op.mtuResponse, 247, 0]
        case Op.readByGroupTypeRequest:  // Start(2) End(2) Group Type(2 or 16)
            guard let start = c.readLE16(), let end = c.readLE16(), let type = c.readLE16(), start != 0, start <= end
            else {
                return Self.error(op, 0, ATTError.invalidHandle)
            }
            guard type == 0x2800 else { return Self.error(op, start, ATTError.unsupportedGroupType) }
            let services = attributes.filter { $0.type == 0x2800 && $0.handle >= start && $0.handle <= end }
            guard !services.isEmpty else { return Self.error(op, start, ATTError.attributeNotFound) }
            var out: [UInt8] = [Op.readByGroupTypeResponse, 6]
            for s in services where out.count + 6 <= mtu {
                // The group ends before the next service, or at the database's last handle (§3.4.4.10:
                // End Group Handle is the handle of the last attribute within the group).
                let groupEnd =
                    attributes.first { $0.type == 0x2800 && $0.handle > s.handle }.map { $0.handle - 1 }
                    ?? attributes.last!.handle
                out += le(s.handle) + le(groupEnd) + s.value
            }
            return out
        case Op.readByTypeRequest:  // Start(2) End(2) Type(2)
            guard let start = c.readLE16(), let end = c.readLE16(), let type = c.readLE16(), start != 0, start <= end
            else {
                return Self.error(op, 0, ATTError.invalidHandle)
            }
            let found = attributes.filter { $0.type == type && $0.handle >= start && $0.handle <= end }
            guard let first = found.first else { return Self.error(op, start, ATTError.attributeNotFound) }
            if let props = properties(ofValue: first.handle), props & Prop.read == 0 {
                return Self.error(op, first.handle, ATTError.readNotPermitted)
            }
            // §3.4.4.2: each value is truncated to min(253, ATT_MTU − 4) octets.
            let cap = min(253, mtu - 4)
            let len = 2 + min(cap, value(of: first.handle, at: t).count)
            var out: [UInt8] = [Op.readByTypeResponse, UInt8(len)]
            for a in found where out.count + len <= mtu {
                if let props = properties(ofValue: a.handle), props & Prop.read == 0 { break }
                let v = value(of: a.handle, at: t).prefix(cap)
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
        case Op.readRequest:  // Handle(2) → Value, the first ATT_MTU − 1 octets (§3.4.4.4)
            guard let h = c.readLE16() else { return Self.error(op, 0, ATTError.invalidPDU) }
            guard attributes.contains(where: { $0.handle == h }) else {
                return Self.error(op, h, ATTError.invalidHandle)
            }
            if let props = properties(ofValue: h), props & Prop.read == 0 {
                return Self.error(op, h, ATTError.readNotPermitted)
            }
            return [Op.readResponse] + value(of: h, at: t).prefix(mtu - 1)
        case Op.readBlobRequest:
            // §3.4.4.5 ATT_READ_BLOB_REQ: Handle(2) Value_Offset(2) → ATT_READ_BLOB_RSP: Part_Attribute_Value,
            // at most ATT_MTU − 1 octets from the offset. "If the Value_Offset parameter was greater than
            // the length of the attribute value, the ATT_ERROR_RSP PDU shall be sent with the Error Code
            // parameter set to Invalid Offset (0x07)." An offset equal to the length reads nothing.
            guard let h = c.readLE16(), let offset = c.readLE16() else { return Self.error(op, 0, ATTError.invalidPDU) }
            guard attributes.contains(where: { $0.handle == h }) else {
                return Self.error(op, h, ATTError.invalidHandle)
            }
            if let props = properties(ofValue: h), props & Prop.read == 0 {
                return Self.error(op, h, ATTError.readNotPermitted)
            }
            let v = value(of: h, at: t)
            guard Int(offset) <= v.count else { return Self.error(op, h, ATTError.invalidOffset) }
            return [Op.readBlobResponse] + v[Int(offset)...].prefix(mtu - 1)
        case Op.writeRequest, Op.writeCommand:  // Handle(2) Value
            guard let h = c.readLE16() else {
                return op == Op.writeRequest ? Self.error(op, 0, ATTError.invalidPDU) : nil
            }
            let v = Array(c.readRest())
            let status = write(h, v, command: op == Op.writeCommand)
            // §3.4.5.3: a Write Command never gets a response, not even an error.
            guard op == Op.writeRequest else { return nil }
            return status == 0 ? [Op.writeResponse] : Self.error(op, h, status)
        case Op.confirmation:
            // §3.4.7.2: the client's ATT_HANDLE_VALUE_CFM; the next indication may go.
            if awaitingConfirmation { confirmationsReceived += 1 }
            awaitingConfirmation = false
            return nil
        default:
            // Commands (bit 6 set) are ignored; unsupported requests get Request Not Supported.
            return op & 0x40 != 0 ? nil : Self.error(op, 0, ATTError.requestNotSupported)
        }
    }

    /// Applies one write; returns 0 or the ATT error code.
    private mutating func write(_ h: UInt16, _ v: [UInt8], command: Bool) -> UInt8 {
        if let cccd = Self.cccdFor[h] {
            // Vol 3, Part G, §3.3.3.3: the CCCD is 2 octets, bit 0 Notification, bit 1 Indication.
            guard v.count == 2 else { return ATTError.invalidAttributeValueLength }
            setValue(of: h, v)
            if v[0] & 0x01 != 0 && cccd.notify { notifying.insert(cccd.value) } else { notifying.remove(cccd.value) }
            if v[0] & 0x02 != 0 && cccd.indicate {
                indicating.insert(cccd.value)
            } else {
                indicating.remove(cccd.value)
                pendingIndications.removeAll { $0 == cccd.value }
            }
            return 0
        }
        guard attributes.contains(where: { $0.handle == h }) else { return ATTError.invalidHandle }
        guard let props = properties(ofValue: h), props & (command ? Prop.writeWithoutResponse : Prop.write) != 0 else {
            return ATTError.writeNotPermitted
        }
        switch h {
        case Self.alertLevelHandle:
            // Immediate Alert Service 1.0, §3.1: Alert Level is one uint8, 0 No Alert, 1 Mild, 2 High.
            guard v.count == 1 else { return ATTError.invalidAttributeValueLength }
            guard v[0] <= 2 else { return ATTError.valueNotAllowed }
        default:
            break
        }
        setValue(of: h, v)
        writes.append(Write(handle: h, value: v, command: command))
        return 0
    }

    private mutating func queueIndication(_ handle: UInt16) {
        if !pendingIndications.contains(handle) { pendingIndications.append(handle) }
    }

    /// Handle Value Notifications due at `t` for the subscribed characteristics, each value cut
    /// to ATT_MTU − 3 octets (§3.4.7.1).
    public func notifications(at t: Double) -> [[UInt8]] {
        notifying.sorted().map { [Op.notification] + le($0) + value(of: $0, at: t).prefix(mtu - 3) }
    }

    /// A periodic tick: every characteristic with indications enabled (other than Service Changed,
    /// which is indicated only on a change) gets an indication queued.
    public mutating func queuePeriodicIndications() {
        for h in indicating.sorted() where h != Self.serviceChangedHandle { queueIndication(h) }
    }

    /// The next Handle Value Indication, if one is queued and none is awaiting its confirmation.
    /// §3.4.7.2: "A server shall not send an ATT_HANDLE_VALUE_IND PDU until any previous
    /// ATT_HANDLE_VALUE_IND PDU has been confirmed by the client."
    public mutating func nextIndication(at t: Double) -> [UInt8]? {
        guard !awaitingConfirmation, !pendingIndications.isEmpty else { return nil }
        let h = pendingIndications.removeFirst()
        awaitingConfirmation = true
        indicationsSent += 1
        return [Op.indication] + le(h) + value(of: h, at: t).prefix(mtu - 3)
    }
}

@inline(__always) func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
