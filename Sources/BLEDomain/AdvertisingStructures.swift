import BLETransport

/// One AD structure: `Length | AD Type | AD Data` (Core v5.4, Vol 3, Part C, §11, Figure 11.1).
/// `value` is a slice of the report's bytes: nothing is copied.
public struct AdvertisingStructure: Sendable {
    public var type: AdvertisingDataType
    public var value: ArraySlice<UInt8>

    @inlinable public init(type: AdvertisingDataType, value: ArraySlice<UInt8>) {
        self.type = type
        self.value = value
    }
}

/// What went wrong while walking AD structures. Decoding never traps; it records and carries on
/// where it safely can.
public struct AdvertisingIssues: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A Length field ran past the end of the data; the rest was ignored.
    public static let truncated = AdvertisingIssues(rawValue: 1 << 0)
    /// A zero Length (which "shall only occur to allow an early termination", Vol 3, Part C, §11)
    /// was followed by non-zero octets; they were ignored.
    public static let zeroLength = AdvertisingIssues(rawValue: 1 << 1)
    /// A known AD type had a length its format does not allow (odd UUID list, two-octet TX power, …);
    /// that structure was ignored.
    public static let badFieldLength = AdvertisingIssues(rawValue: 1 << 2)
    /// More data than any advertisement can carry (1650 octets, Vol 4, Part E, §7.8.54).
    public static let oversized = AdvertisingIssues(rawValue: 1 << 3)

    public var description: String {
        var parts: [String] = []
        if contains(.truncated) { parts.append("truncated") }
        if contains(.zeroLength) { parts.append("zero-length") }
        if contains(.badFieldLength) { parts.append("bad-field-length") }
        if contains(.oversized) { parts.append("oversized") }
        return "[" + parts.joined(separator: ",") + "]"
    }
}

/// Walks the AD structures in advertising or scan response data, in order.
///
/// Stops at the end, at a zero Length (early termination), or at a Length that runs past the end;
/// `issues` says which faults it met. Never allocates.
public struct AdvertisingStructureIterator: IteratorProtocol, Sendable {
    @usableFromInline var cursor: ByteCursor
    /// Faults met so far.
    @inlinable public var issues: AdvertisingIssues { _issues }
    @usableFromInline var _issues: AdvertisingIssues = []

    @inlinable public init(_ data: ArraySlice<UInt8>) {
        cursor = ByteCursor(data)
        if data.count > AdvertisingStructureIterator.maximumDataLength { _issues.insert(.oversized) }
    }

    /// The largest advertising data an extended advertising set can carry.
    public static let maximumDataLength = 1650

    @inlinable public mutating func next() -> AdvertisingStructure? {
        guard let length = cursor.readU8() else { return nil }
        guard length > 0 else {
            // Padding after an early termination is allowed only as zeros.
            if cursor.rest.contains(where: { $0 != 0 }) { _issues.insert(.zeroLength) }
            _ = cursor.readRest()
            return nil
        }
        guard let body = cursor.readBytes(Int(length)) else {
            _issues.insert(.truncated)
            _ = cursor.readRest()
            return nil
        }
        return AdvertisingStructure(
            type: AdvertisingDataType(rawValue: body[body.startIndex]), value: body.dropFirst())
    }
}

/// AD structures as a sequence: `for s in AdvertisingStructures(data) { … }`.
public struct AdvertisingStructures: Sequence, Sendable {
    public var data: ArraySlice<UInt8>
    @inlinable public init(_ data: ArraySlice<UInt8>) { self.data = data }
    @inlinable public func makeIterator() -> AdvertisingStructureIterator { AdvertisingStructureIterator(data) }
}
