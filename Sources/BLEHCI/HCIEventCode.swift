import BLETransport

/// An HCI event code (Core v5.4, Vol 4, Part E, §7.7). An open set: unknown codes print by number.
public struct HCIEventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let disconnectionComplete = HCIEventCode(rawValue: 0x05)
    public static let encryptionChange = HCIEventCode(rawValue: 0x08)
    public static let readRemoteVersionInformationComplete = HCIEventCode(rawValue: 0x0C)
    public static let commandComplete = HCIEventCode(rawValue: 0x0E)
    public static let commandStatus = HCIEventCode(rawValue: 0x0F)
    public static let hardwareError = HCIEventCode(rawValue: 0x10)
    public static let numberOfCompletedPackets = HCIEventCode(rawValue: 0x13)
    public static let dataBufferOverflow = HCIEventCode(rawValue: 0x1A)
    public static let encryptionKeyRefreshComplete = HCIEventCode(rawValue: 0x30)
    public static let leMeta = HCIEventCode(rawValue: 0x3E)
    public static let vendorSpecific = HCIEventCode(rawValue: 0xFF)

    static let names: [UInt8: String] = [
        0x05: "Disconnection Complete",
        0x08: "Encryption Change",
        0x0C: "Read Remote Version Information Complete",
        0x0E: "Command Complete",
        0x0F: "Command Status",
        0x10: "Hardware Error",
        0x13: "Number Of Completed Packets",
        0x1A: "Data Buffer Overflow",
        0x30: "Encryption Key Refresh Complete",
        0x3E: "LE Meta",
        0xFF: "Vendor Specific",
    ]

    public var name: String? { Self.names[rawValue] }

    public var description: String {
        let number = "0x" + upperHex(rawValue, digits: 2)
        return name.map { "\($0) (\(number))" } ?? "event \(number)"
    }
}

/// The subevent code of an LE Meta event (§7.7.65). An open set: unknown subevents print by number.
public struct LEMetaSubevent: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let connectionComplete = LEMetaSubevent(rawValue: 0x01)
    public static let advertisingReport = LEMetaSubevent(rawValue: 0x02)
    public static let connectionUpdateComplete = LEMetaSubevent(rawValue: 0x03)
    public static let readRemoteFeaturesComplete = LEMetaSubevent(rawValue: 0x04)
    public static let longTermKeyRequest = LEMetaSubevent(rawValue: 0x05)
    public static let remoteConnectionParameterRequest = LEMetaSubevent(rawValue: 0x06)
    public static let dataLengthChange = LEMetaSubevent(rawValue: 0x07)
    public static let enhancedConnectionComplete = LEMetaSubevent(rawValue: 0x0A)
    public static let directedAdvertisingReport = LEMetaSubevent(rawValue: 0x0B)
    public static let phyUpdateComplete = LEMetaSubevent(rawValue: 0x0C)
    public static let extendedAdvertisingReport = LEMetaSubevent(rawValue: 0x0D)
    public static let scanTimeout = LEMetaSubevent(rawValue: 0x11)
    public static let advertisingSetTerminated = LEMetaSubevent(rawValue: 0x12)
    public static let channelSelectionAlgorithm = LEMetaSubevent(rawValue: 0x14)
    public static let enhancedConnectionCompleteV2 = LEMetaSubevent(rawValue: 0x29)

    static let names: [UInt8: String] = [
        0x01: "LE Connection Complete",
        0x02: "LE Advertising Report",
        0x03: "LE Connection Update Complete",
        0x04: "LE Read Remote Features Complete",
        0x05: "LE Long Term Key Request",
        0x06: "LE Remote Connection Parameter Request",
        0x07: "LE Data Length Change",
        0x0A: "LE Enhanced Connection Complete",
        0x0B: "LE Directed Advertising Report",
        0x0C: "LE PHY Update Complete",
        0x0D: "LE Extended Advertising Report",
        0x11: "LE Scan Timeout",
        0x12: "LE Advertising Set Terminated",
        0x14: "LE Channel Selection Algorithm",
        0x29: "LE Enhanced Connection Complete [v2]",
    ]

    public var name: String? { Self.names[rawValue] }

    public var description: String {
        let number = "0x" + upperHex(rawValue, digits: 2)
        return name.map { "\($0) (\(number))" } ?? "LE subevent \(number)"
    }
}
