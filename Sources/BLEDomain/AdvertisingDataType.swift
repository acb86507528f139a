import BLEHCI
import BLETransport

/// The type byte of an AD structure (Core Specification Supplement v11, Part A, §1; numbers from
/// Assigned Numbers §2.3 "Common Data Types"). An open set: unknown types are kept and print by number.
public struct AdvertisingDataType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// CSS Part A §1.3: one octet of flag bits (LE Limited/General Discoverable, BR/EDR Not Supported, …).
    public static let flags = AdvertisingDataType(rawValue: 0x01)
    /// CSS Part A §1.1: lists of 16-bit service UUIDs, little-endian, 2 octets each.
    public static let incompleteServiceUUIDs16 = AdvertisingDataType(rawValue: 0x02)
    public static let completeServiceUUIDs16 = AdvertisingDataType(rawValue: 0x03)
    /// 32-bit service UUIDs, 4 octets each.
    public static let incompleteServiceUUIDs32 = AdvertisingDataType(rawValue: 0x04)
    public static let completeServiceUUIDs32 = AdvertisingDataType(rawValue: 0x05)
    /// 128-bit service UUIDs, 16 octets each, least significant octet first.
    public static let incompleteServiceUUIDs128 = AdvertisingDataType(rawValue: 0x06)
    public static let completeServiceUUIDs128 = AdvertisingDataType(rawValue: 0x07)
    /// CSS Part A §1.2: UTF-8 device name, shortened or complete.
    public static let shortenedLocalName = AdvertisingDataType(rawValue: 0x08)
    public static let completeLocalName = AdvertisingDataType(rawValue: 0x09)
    /// CSS Part A §1.5: one signed octet, -127…+127 dBm.
    public static let txPowerLevel = AdvertisingDataType(rawValue: 0x0A)
    /// CSS Part A §1.11: 16-bit service UUID followed by service data.
    public static let serviceData16 = AdvertisingDataType(rawValue: 0x16)
    /// CSS Part A §1.12: 16-bit appearance value, little-endian.
    public static let appearance = AdvertisingDataType(rawValue: 0x19)
    public static let serviceData32 = AdvertisingDataType(rawValue: 0x20)
    public static let serviceData128 = AdvertisingDataType(rawValue: 0x21)
    /// CSS Part A §1.4: 16-bit company identifier (little-endian) followed by the company's data.
    public static let manufacturerSpecificData = AdvertisingDataType(rawValue: 0xFF)

    public var description: String {
        switch self {
        case .flags: "flags"
        case .incompleteServiceUUIDs16: "incomplete-uuid16"
        case .completeServiceUUIDs16: "complete-uuid16"
        case .incompleteServiceUUIDs32: "incomplete-uuid32"
        case .completeServiceUUIDs32: "complete-uuid32"
        case .incompleteServiceUUIDs128: "incomplete-uuid128"
        case .completeServiceUUIDs128: "complete-uuid128"
        case .shortenedLocalName: "shortened-name"
        case .completeLocalName: "complete-name"
        case .txPowerLevel: "tx-power"
        case .serviceData16: "service-data-uuid16"
        case .appearance: "appearance"
        case .serviceData32: "service-data-uuid32"
        case .serviceData128: "service-data-uuid128"
        case .manufacturerSpecificData: "manufacturer-data"
        default: "ad-type(0x\(String(rawValue, radix: 16)))"
        }
    }

    /// Width of one UUID for the service UUID list and service data types, else nil.
    @inlinable public var uuidWidth: Int? {
        switch rawValue {
        case 0x02, 0x03, 0x16: 2
        case 0x04, 0x05, 0x20: 4
        case 0x06, 0x07, 0x21: 16
        default: nil
        }
    }

    /// Reads one UUID of `width` octets (2, 4 or 16) as AD structures carry it, little-endian.
    @inlinable static func readUUID(_ bytes: ArraySlice<UInt8>, width: Int) -> BluetoothUUID? {
        var c = ByteCursor(bytes)
        switch width {
        case 2: return c.readLE16().map { BluetoothUUID(uuid16: $0) }
        case 4: return c.readLE32().map { BluetoothUUID(uuid32: $0) }
        default: return BluetoothUUID(littleEndianBytes: bytes)
        }
    }
}
