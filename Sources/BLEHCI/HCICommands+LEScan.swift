import BLETransport

// Scanning commands. Section numbers are Core v5.4, Vol 4, Part E.

/// LE_Scan_Type: 0x00 passive (no scan requests), 0x01 active (§7.8.10).
public struct LEScanType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let passive = LEScanType(rawValue: 0x00)
    public static let active = LEScanType(rawValue: 0x01)
}

/// §7.8.10 HCI_LE_Set_Scan_Parameters. Command parameters: LE_Scan_Type (1), LE_Scan_Interval (2),
/// LE_Scan_Window (2), Own_Address_Type (1), Scanning_Filter_Policy (1). Return parameters: Status (1).
/// Interval and window are in 0.625 ms units, 0x0004…0x4000, window ≤ interval.
public struct LESetScanParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanParameters
    public var scanType: LEScanType
    public var interval: UInt16
    public var window: UInt16
    public var ownAddressType: LEAddressType
    public var filterPolicy: UInt8

    public init(
        scanType: LEScanType, interval: UInt16, window: UInt16, ownAddressType: LEAddressType = .public,
        filterPolicy: UInt8 = 0
    ) {
        self.scanType = scanType
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(scanType.rawValue)
        w.le16(interval)
        w.le16(window)
        w.u8(ownAddressType.rawValue)
        w.u8(filterPolicy)
    }
}

/// §7.8.11 HCI_LE_Set_Scan_Enable. Command parameters: LE_Scan_Enable (1), Filter_Duplicates (1).
/// Return parameters: Status (1).
public struct LESetScanEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanEnable
    public var enable: Bool
    public var filterDuplicates: Bool

    public init(enable: Bool, filterDuplicates: Bool = false) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(enable ? 1 : 0)
        w.u8(filterDuplicates ? 1 : 0)
    }
}

/// §7.8.64 HCI_LE_Set_Extended_Scan_Parameters. Command parameters: Own_Address_Type (1),
/// Scanning_Filter_Policy (1), Scanning_PHYs (1; bit 0 LE 1M, bit 2 LE Coded), then for each PHY bit set,
/// in bit order: Scan_Type (1), Scan_Interval (2), Scan_Window (2). Return parameters: Status (1).
public struct LESetExtendedScanParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedScanParameters

    public struct PHY: Hashable, Sendable {
        /// The Scanning_PHYs bit: 0 for LE 1M, 2 for LE Coded.
        public var bit: UInt8
        public var scanType: LEScanType
        public var interval: UInt16
        public var window: UInt16

        public init(bit: UInt8, scanType: LEScanType, interval: UInt16, window: UInt16) {
            self.bit = bit
            self.scanType = scanType
            self.interval = interval
            self.window = window
        }

        public static func le1M(_ t: LEScanType, interval: UInt16, window: UInt16) -> PHY {
            PHY(bit: 0, scanType: t, interval: interval, window: window)
        }
        public static func leCoded(_ t: LEScanType, interval: UInt16, window: UInt16) -> PHY {
            PHY(bit: 2, scanType: t, interval: interval, window: window)
        }
    }

    public var ownAddressType: LEAddressType
    public var filterPolicy: UInt8
    public var phys: [PHY]

    public init(ownAddressType: LEAddressType = .public, filterPolicy: UInt8 = 0, phys: [PHY]) {
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
        self.phys = phys.sorted { $0.bit < $1.bit }
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(ownAddressType.rawValue)
        w.u8(filterPolicy)
        w.u8(phys.reduce(0) { $0 | 1 << $1.bit })
        for p in phys {
            w.u8(p.scanType.rawValue)
            w.le16(p.interval)
            w.le16(p.window)
        }
    }
}

/// §7.8.65 HCI_LE_Set_Extended_Scan_Enable. Command parameters: Enable (1), Filter_Duplicates (1),
/// Duration (2; 10 ms units, 0 = until disabled), Period (2; 1.28 s units, 0 = continuous).
/// Return parameters: Status (1).
public struct LESetExtendedScanEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedScanEnable
    public var enable: Bool
    /// 0 off, 1 on, 2 on and reset each period.
    public var filterDuplicates: UInt8
    public var duration: UInt16
    public var period: UInt16

    public init(enable: Bool, filterDuplicates: UInt8 = 0, duration: UInt16 = 0, period: UInt16 = 0) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
        self.duration = duration
        self.period = period
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.u8(enable ? 1 : 0)
        w.u8(filterDuplicates)
        w.le16(duration)
        w.le16(period)
    }
}
