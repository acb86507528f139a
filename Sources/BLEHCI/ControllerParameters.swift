import BLETransport

/// Return parameters of Read Local Version Information (Core v5.4, Vol 4, Part E, §7.4.1).
public struct LocalVersionInformation: Hashable, Sendable {
    /// Assigned Numbers "Core Specification Version": 0x0D is 5.4.
    public var hciVersion: UInt8
    public var hciSubversion: UInt16
    public var lmpVersion: UInt8
    /// Assigned Numbers company identifier of the controller's manufacturer.
    public var companyIdentifier: UInt16
    public var lmpSubversion: UInt16

    public init(
        hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8, companyIdentifier: UInt16,
        lmpSubversion: UInt16
    ) {
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }
}

/// The 64-octet Supported_Commands bit field (§7.4.2; the table in §6.27).
public struct SupportedCommands: Hashable, Sendable {
    public var octets: [UInt8]

    public init(octets: [UInt8]) { self.octets = octets }

    public func supports(octet: Int, bit: Int) -> Bool {
        octet < octets.count && octets[octet] & (1 << bit) != 0
    }

    /// LE Read Buffer Size [v2]: octet 41, bit 5 (§6.27).
    public var leReadBufferSizeV2: Bool { supports(octet: 41, bit: 5) }
    /// LE Set Extended Scan Parameters: octet 37, bit 5.
    public var leSetExtendedScanParameters: Bool { supports(octet: 37, bit: 5) }
    /// LE Set Extended Advertising Parameters, Data and Enable: octet 36, bits 2, 3 and 5.
    public var leExtendedAdvertising: Bool {
        supports(octet: 36, bit: 2) && supports(octet: 36, bit: 3) && supports(octet: 36, bit: 5)
    }
}

/// LMP features page 0 (§7.4.3; Vol 2, Part C, §3.3). Bit 38 "LE Supported (Controller)".
public struct LMPFeatures: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var leSupported: Bool { rawValue & (1 << 38) != 0 }
}

/// LE features (§7.8.3; the bit table in Vol 6, Part B, §4.6). An open bit set.
public struct LEFeatures: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let encryption = LEFeatures(rawValue: 1 << 0)
    public static let connectionParametersRequest = LEFeatures(rawValue: 1 << 1)
    public static let extendedRejectIndication = LEFeatures(rawValue: 1 << 2)
    public static let peripheralInitiatedFeaturesExchange = LEFeatures(rawValue: 1 << 3)
    public static let ping = LEFeatures(rawValue: 1 << 4)
    public static let dataPacketLengthExtension = LEFeatures(rawValue: 1 << 5)
    public static let llPrivacy = LEFeatures(rawValue: 1 << 6)
    public static let extendedScannerFilterPolicies = LEFeatures(rawValue: 1 << 7)
    public static let le2MPHY = LEFeatures(rawValue: 1 << 8)
    public static let codedPHY = LEFeatures(rawValue: 1 << 11)
    /// "LE Extended Advertising": the controller takes the extended scan commands and sends
    /// LE Extended Advertising Reports.
    public static let extendedAdvertising = LEFeatures(rawValue: 1 << 12)
    public static let periodicAdvertising = LEFeatures(rawValue: 1 << 13)
    public static let channelSelectionAlgorithm2 = LEFeatures(rawValue: 1 << 14)
}

/// Return parameters of Read Buffer Size (§7.4.5): the BR/EDR ACL buffers, which an LE controller
/// also uses for LE traffic when LE Read Buffer Size reports zero.
public struct BufferSize: Hashable, Sendable {
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16

    public init(
        aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8, totalNumACLDataPackets: UInt16,
        totalNumSynchronousDataPackets: UInt16
    ) {
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }
}

/// Return parameters of LE Read Buffer Size [v1] (§7.8.2) and [v2] (ISO fields present only in v2).
/// A zero length means "no dedicated LE buffers: use those of Read Buffer Size".
public struct LEBufferSize: Hashable, Sendable {
    public var leACLDataPacketLength: UInt16
    public var totalNumLEACLDataPackets: UInt8
    public var isoDataPacketLength: UInt16?
    public var totalNumISODataPackets: UInt8?

    public init(
        leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8, isoDataPacketLength: UInt16? = nil,
        totalNumISODataPackets: UInt8? = nil
    ) {
        self.leACLDataPacketLength = leACLDataPacketLength
        self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        self.isoDataPacketLength = isoDataPacketLength
        self.totalNumISODataPackets = totalNumISODataPackets
    }
}

/// Return parameters of LE Read Maximum Data Length (§7.8.46).
public struct LEMaximumDataLength: Hashable, Sendable {
    public var maxTxOctets: UInt16
    public var maxTxTime: UInt16
    public var maxRxOctets: UInt16
    public var maxRxTime: UInt16

    public init(maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
        self.maxTxOctets = maxTxOctets
        self.maxTxTime = maxTxTime
        self.maxRxOctets = maxRxOctets
        self.maxRxTime = maxRxTime
    }
}

/// Set Event Mask bits (§7.3.1). Command Complete, Command Status and Number Of Completed Packets
/// cannot be masked.
public struct HCIEventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let disconnectionComplete = HCIEventMask(rawValue: 1 << 4)
    public static let encryptionChange = HCIEventMask(rawValue: 1 << 7)
    public static let readRemoteVersionInformationComplete = HCIEventMask(rawValue: 1 << 11)
    public static let hardwareError = HCIEventMask(rawValue: 1 << 15)
    public static let dataBufferOverflow = HCIEventMask(rawValue: 1 << 25)
    public static let encryptionKeyRefreshComplete = HCIEventMask(rawValue: 1 << 47)
    public static let leMeta = HCIEventMask(rawValue: 1 << 61)
}

/// LE Set Event Mask bits (§7.8.1): bit n enables LE Meta subevent n + 1.
public struct LEEventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ subevent: LEMetaSubevent) { rawValue = 1 << UInt64(subevent.rawValue - 1) }

    public static let connectionComplete = LEEventMask(.connectionComplete)
    public static let advertisingReport = LEEventMask(.advertisingReport)
    public static let connectionUpdateComplete = LEEventMask(.connectionUpdateComplete)
    public static let readRemoteFeaturesComplete = LEEventMask(.readRemoteFeaturesComplete)
    public static let longTermKeyRequest = LEEventMask(.longTermKeyRequest)
    public static let remoteConnectionParameterRequest = LEEventMask(.remoteConnectionParameterRequest)
    public static let dataLengthChange = LEEventMask(.dataLengthChange)
    public static let enhancedConnectionComplete = LEEventMask(.enhancedConnectionComplete)
    public static let directedAdvertisingReport = LEEventMask(.directedAdvertisingReport)
    public static let phyUpdateComplete = LEEventMask(.phyUpdateComplete)
    public static let extendedAdvertisingReport = LEEventMask(.extendedAdvertisingReport)
    public static let scanTimeout = LEEventMask(.scanTimeout)
    public static let channelSelectionAlgorithm = LEEventMask(.channelSelectionAlgorithm)
}
