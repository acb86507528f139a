/// The BTHome v2 object table (bthome.io/format, "Sensor data", "Binary sensor data", "Events",
/// "Device information"): for each object id, what it measures, how many octets follow the id,
/// whether they are signed, and the factor that turns the little-endian integer into the unit.
public struct BTHomeObject: Hashable, Sendable {
    public var quantity: SensorQuantity
    /// Octets after the object id; 0 for the objects whose first octet is their length (text, raw, command).
    public var length: UInt8
    public var isSigned: Bool
    public var factor: Double

    @inlinable init(_ quantity: SensorQuantity, _ length: UInt8, signed: Bool = false, _ factor: Double = 1) {
        self.quantity = quantity
        self.length = length
        self.isSigned = signed
        self.factor = factor
    }

    /// Object ids whose first octet is a length: text (0x53), raw (0x54); command (0x3B) carries
    /// `opcode | args`, with the argument count in the length octet's low five bits.
    public static let text: UInt8 = 0x53
    public static let raw: UInt8 = 0x54
    public static let command: UInt8 = 0x3B
    public static let buttonEvent: UInt8 = 0x3A
    public static let dimmerEvent: UInt8 = 0x3C

    /// Nil for an id the specification does not define: "stop parsing" there.
    /// Literal cases compile to a jump table.
    @inlinable public static func forID(_ id: UInt8) -> BTHomeObject? {
        switch id {
        case 0x00: BTHomeObject(.packetID, 1)
        case 0x01: BTHomeObject(.batteryPercent, 1)
        case 0x02: BTHomeObject(.temperature, 2, signed: true, 0.01)
        case 0x03: BTHomeObject(.humidity, 2, 0.01)
        case 0x04: BTHomeObject(.pressure, 3, 0.01)
        case 0x05: BTHomeObject(.illuminance, 3, 0.01)
        case 0x06: BTHomeObject(.massKilograms, 2, 0.01)
        case 0x07: BTHomeObject(.massPounds, 2, 0.01)
        case 0x08: BTHomeObject(.dewPoint, 2, signed: true, 0.01)
        case 0x09: BTHomeObject(.count, 1)
        case 0x0A: BTHomeObject(.energy, 3, 0.001)
        case 0x0B: BTHomeObject(.power, 3, 0.01)
        case 0x0C: BTHomeObject(.voltage, 2, 0.001)
        case 0x0D: BTHomeObject(.pm25, 2)
        case 0x0E: BTHomeObject(.pm10, 2)
        case 0x0F: BTHomeObject(.generic, 1)
        case 0x10: BTHomeObject(.powerOn, 1)
        case 0x11: BTHomeObject(.opening, 1)
        case 0x12: BTHomeObject(.co2, 2)
        case 0x13: BTHomeObject(.tvoc, 2)
        case 0x14: BTHomeObject(.moisture, 2, 0.01)
        // Binary sensors 0x15…0x2D, one octet each, in the order of the specification's table
        // (battery low … window), which `SensorQuantity` follows from `batteryLow`.
        case 0x15...0x2D: BTHomeObject(SensorQuantity(rawValue: SensorQuantity.batteryLow.rawValue + (id - 0x15)), 1)
        case 0x2E: BTHomeObject(.humidity, 1)
        case 0x2F: BTHomeObject(.moisture, 1)
        case 0x3A: BTHomeObject(.buttonEvent, 1)
        case 0x3B: BTHomeObject(.generic, 0)  // command: skipped, see `command`
        case 0x3C: BTHomeObject(.dimmerEvent, 2)
        case 0x3D: BTHomeObject(.count, 2)
        case 0x3E: BTHomeObject(.count, 4)
        case 0x3F: BTHomeObject(.rotation, 2, signed: true, 0.1)
        case 0x40: BTHomeObject(.distance, 2, 0.001)  // millimetres, published in metres
        case 0x41: BTHomeObject(.distance, 2, 0.1)
        case 0x42: BTHomeObject(.duration, 3, 0.001)
        case 0x43: BTHomeObject(.current, 2, 0.001)
        case 0x44: BTHomeObject(.speed, 2, 0.01)
        case 0x45: BTHomeObject(.temperature, 2, signed: true, 0.1)
        case 0x46: BTHomeObject(.uvIndex, 1, 0.1)
        case 0x47: BTHomeObject(.volume, 2, 0.1)
        case 0x48: BTHomeObject(.volume, 2, 0.001)  // millilitres, published in litres
        case 0x49: BTHomeObject(.volumeFlowRate, 2, 0.001)
        case 0x4A: BTHomeObject(.voltage, 2, 0.1)
        case 0x4B: BTHomeObject(.gas, 3, 0.001)
        case 0x4C: BTHomeObject(.gas, 4, 0.001)
        case 0x4D: BTHomeObject(.energy, 4, 0.001)
        case 0x4E: BTHomeObject(.volume, 4, 0.001)
        case 0x4F: BTHomeObject(.water, 4, 0.001)
        case 0x50: BTHomeObject(.timestamp, 4)
        case 0x51: BTHomeObject(.acceleration, 2, 0.001)
        case 0x52: BTHomeObject(.gyroscope, 2, 0.001)
        case 0x53, 0x54: BTHomeObject(.generic, 0)  // text, raw: skipped
        case 0x55: BTHomeObject(.volumeStorage, 4, 0.001)
        case 0x56: BTHomeObject(.conductivity, 2)
        case 0x57: BTHomeObject(.temperature, 1, signed: true)
        case 0x58: BTHomeObject(.temperature, 1, signed: true, 0.35)
        case 0x59: BTHomeObject(.count, 1, signed: true)
        case 0x5A: BTHomeObject(.count, 2, signed: true)
        case 0x5B: BTHomeObject(.count, 4, signed: true)
        case 0x5C: BTHomeObject(.power, 4, signed: true, 0.01)
        case 0x5D: BTHomeObject(.current, 2, signed: true, 0.001)
        case 0x5E: BTHomeObject(.direction, 2, 0.01)
        case 0x5F: BTHomeObject(.precipitation, 2, 0.1)
        case 0x60: BTHomeObject(.channel, 1)
        case 0x61: BTHomeObject(.rotationalSpeed, 2)
        case 0x62: BTHomeObject(.speed, 4, signed: true, 0.000_001)
        case 0x63: BTHomeObject(.acceleration, 4, signed: true, 0.000_001)
        case 0x64: BTHomeObject(.lightLevel, 1)
        case 0x65: BTHomeObject(.settingsRevision, 1)
        case 0xF0: BTHomeObject(.deviceType, 2)
        case 0xF1: BTHomeObject(.firmwareVersion, 4)
        case 0xF2: BTHomeObject(.firmwareVersion, 3)
        default: nil
        }
    }
}
