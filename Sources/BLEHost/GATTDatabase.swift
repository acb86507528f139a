import BLEHCI

/// Characteristic Properties (Core v5.4, Vol 3, Part G, §3.3.1.1, Table 3.5). Open: bits this host
/// does not name are kept and print by number.
public struct GATTCharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = GATTCharacteristicProperties(rawValue: 0x01)
    public static let read = GATTCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = GATTCharacteristicProperties(rawValue: 0x04)
    public static let write = GATTCharacteristicProperties(rawValue: 0x08)
    public static let notify = GATTCharacteristicProperties(rawValue: 0x10)
    public static let indicate = GATTCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = GATTCharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = GATTCharacteristicProperties(rawValue: 0x80)

    /// Bit by bit, the names used in JSON and logs.
    static let names: [(GATTCharacteristicProperties, String)] = [
        (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write_without_response"),
        (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticated_signed_writes"), (.extendedProperties, "extended_properties"),
    ]

    /// The names of the set bits, lowest first (all eight bits have names).
    public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

    public var description: String { names.isEmpty ? "[]" : names.joined(separator: "|") }
}

/// A descriptor found by Find Information (Part G, §4.7.1).
public struct GATTDescriptor: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// A characteristic (Part G, §3.3): its declaration, value and descriptors.
public struct GATTCharacteristic: Hashable, Sendable {
    public var uuid: BluetoothUUID
    /// The handle of the Characteristic Declaration (0x2803).
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    /// The last handle of the characteristic (its last descriptor, or its value when it has none).
    public var endHandle: UInt16
    public var properties: GATTCharacteristicProperties
    public var descriptors: [GATTDescriptor]

    public init(
        uuid: BluetoothUUID, declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16,
        properties: GATTCharacteristicProperties, descriptors: [GATTDescriptor] = []
    ) {
        self.uuid = uuid
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
        self.properties = properties
        self.descriptors = descriptors
    }

    /// The Client Characteristic Configuration descriptor (0x2902, Part G, §3.3.3.3), if it has one.
    public var cccdHandle: UInt16? {
        descriptors.first { $0.uuid == GATTUUID.clientCharacteristicConfiguration }?.handle
    }
}

/// A primary service (Part G, §3.1) and its characteristics.
public struct GATTService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var startHandle: UInt16
    public var endHandle: UInt16
    public var characteristics: [GATTCharacteristic]

    public init(
        uuid: BluetoothUUID, startHandle: UInt16, endHandle: UInt16,
        characteristics: [GATTCharacteristic] = []
    ) {
        self.uuid = uuid
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.characteristics = characteristics
    }
}

/// The attribute types GATT discovery reads (Part G, §3.1–3.3; Assigned Numbers §3.5–3.8).
public enum GATTUUID {
    public static let primaryService = BluetoothUUID(uuid16: 0x2800)
    public static let secondaryService = BluetoothUUID(uuid16: 0x2801)
    public static let include = BluetoothUUID(uuid16: 0x2802)
    public static let characteristic = BluetoothUUID(uuid16: 0x2803)
    public static let clientCharacteristicConfiguration = BluetoothUUID(uuid16: 0x2902)
    public static let genericAttributeService = BluetoothUUID(uuid16: 0x1801)
    public static let serviceChanged = BluetoothUUID(uuid16: 0x2A05)
}

/// What discovery found on a peer: its primary services in handle order.
public struct GATTDatabase: Hashable, Sendable {
    public var services: [GATTService]

    public init(services: [GATTService] = []) { self.services = services }

    /// Every characteristic, in handle order.
    public var characteristics: [GATTCharacteristic] { services.flatMap(\.characteristics) }

    /// The first characteristic with this UUID.
    public func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristic? {
        characteristics.first { $0.uuid == uuid }
    }

    /// The characteristic whose value lives at `valueHandle`.
    public func characteristic(valueHandle: UInt16) -> GATTCharacteristic? {
        characteristics.first { $0.valueHandle == valueHandle }
    }
}
