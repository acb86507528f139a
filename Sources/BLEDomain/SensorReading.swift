/// One value of a sensor reading.
public struct SensorValue: Hashable, Sendable {
    public var quantity: SensorQuantity
    public var value: Double
    /// Outside `quantity.plausibleRange`: kept for diagnosis, never published as a real reading.
    public var isOutOfRange: Bool

    @inlinable public init(_ quantity: SensorQuantity, _ value: Double, isOutOfRange: Bool = false) {
        self.quantity = quantity
        self.value = value
        self.isOutOfRange = isOutOfRange
    }
}

/// What one sensor advertisement said, decoded without allocating: up to `capacity` values held
/// inline (a BTHome frame fits at most 27 octets of objects, so 16 two-octet objects is its limit
/// in practice; more are counted as dropped), the format, the packet counter where there is one.
public struct SensorReading: Hashable, Sendable, RandomAccessCollection {
    public static let capacity = 16

    public var format: SensorFormat
    /// The model, as Home Assistant's parsers name it ("LYWSD03MMC", "RuuviTag", "H5075" …).
    public var model: StaticString {
        get { modelName }
        set { modelName = newValue }
    }
    /// The frame's packet or measurement counter, where the format has one (repeat detection uses it).
    public var counter: UInt32?
    /// The counter an encrypted frame's nonce carries (BTHome 32-bit, MiBeacon 24-bit extended
    /// counter): what replay protection compares.
    public var encryptionCounter: UInt32?
    /// Whether the frame was encrypted (and decrypted: see `issues` for when it was not).
    public var wasEncrypted: Bool
    public var issues: SensorIssues
    /// Values that did not fit in `capacity`.
    public var droppedValues: UInt8

    @usableFromInline var modelName: StaticString
    @usableFromInline var n: UInt8
    @usableFromInline var storage:
        (
            SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue,
            SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue, SensorValue
        )

    @inlinable public init(format: SensorFormat, model: StaticString) {
        self.format = format
        modelName = model
        counter = nil
        encryptionCounter = nil
        wasEncrypted = false
        issues = []
        droppedValues = 0
        n = 0
        let z = SensorValue(.packetID, 0)
        storage = (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z)
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { Int(n) }

    @inlinable public subscript(i: Int) -> SensorValue {
        precondition(i >= 0 && i < Int(n), "SensorReading index out of range")
        return withUnsafeBytes(of: storage) {
            $0.load(fromByteOffset: i * MemoryLayout<SensorValue>.stride, as: SensorValue.self)
        }
    }

    /// Appends a value, flagging it when it falls outside the quantity's physical range.
    @inlinable public mutating func append(_ quantity: SensorQuantity, _ value: Double) {
        guard Int(n) < Self.capacity else {
            droppedValues &+= droppedValues == .max ? 0 : 1
            return
        }
        var v = SensorValue(quantity, value)
        if !value.isFinite || (quantity.plausibleRange.map { !$0.contains(value) } ?? false) {
            v.isOutOfRange = true
            issues.insert(.outOfRange)
        }
        let i = Int(n)
        withUnsafeMutableBytes(of: &storage) {
            $0.storeBytes(of: v, toByteOffset: i * MemoryLayout<SensorValue>.stride, as: SensorValue.self)
        }
        n += 1
    }

    /// The first value of `quantity`, if the frame carried one and it is in range.
    @inlinable public func value(of quantity: SensorQuantity) -> Double? {
        for v in self where v.quantity == quantity && !v.isOutOfRange { return v.value }
        return nil
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.format == b.format && a.modelName.description == b.modelName.description && a.counter == b.counter
            && a.encryptionCounter == b.encryptionCounter
            && a.wasEncrypted == b.wasEncrypted && a.issues == b.issues && a.droppedValues == b.droppedValues
            && a.elementsEqual(b)
    }

    public func hash(into h: inout Hasher) {
        h.combine(format)
        h.combine(counter)
        for v in self { h.combine(v) }
    }
}
