import BLEHCI

/// How the scanner asks the controller to scan. Duplicate filtering is always off: every advertisement is
/// an RSSI sample for ranging, and a controller's duplicate filter would hide all but the first.
public struct ScanParameters: Sendable, Hashable {
    /// Active scanning sends scan requests and receives scan responses (more data, more airtime);
    /// passive only listens.
    public var active: Bool = false
    /// Time between the starts of two scan windows (2.5 ms … 10.24 s; legacy and 1M extended).
    public var interval: Duration = .milliseconds(100)
    /// Time spent listening in each interval; equal to `interval` for continuous scanning.
    public var window: Duration = .milliseconds(100)
    /// Own address type for scan requests: public, or random (the controller's random address).
    public var ownAddressType: LEAddressType = .public
    /// Also scan on LE Coded (long range) when the controller supports it; extended scanning only.
    public var scanCoded: Bool = false

    public init(
        active: Bool = false, interval: Duration = .milliseconds(100), window: Duration = .milliseconds(100),
        ownAddressType: LEAddressType = .public, scanCoded: Bool = false
    ) {
        self.active = active
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.scanCoded = scanCoded
    }

    /// A duration in 0.625 ms units, clamped to 0x0004…0x4000 (Vol 4, Part E, §7.8.10).
    static func units(_ d: Duration) -> UInt16 {
        let u = (d.seconds / 0.000625).rounded()
        return UInt16(min(max(u, 4), 0x4000))
    }

    var intervalUnits: UInt16 { Self.units(interval) }
    /// Never longer than the interval.
    var windowUnits: UInt16 { min(Self.units(window), intervalUnits) }
    var scanType: LEScanType { active ? .active : .passive }

    /// The commands that start scanning, legacy or extended.
    func enableCommands(extended: Bool, codedSupported: Bool) -> [any HCICommand] {
        if extended {
            var phys: [LESetExtendedScanParametersCommand.PHY] = [
                .le1M(scanType, interval: intervalUnits, window: windowUnits)
            ]
            if scanCoded && codedSupported {
                phys.append(.leCoded(scanType, interval: intervalUnits, window: windowUnits))
            }
            return [
                LESetExtendedScanParametersCommand(ownAddressType: ownAddressType, phys: phys),
                LESetExtendedScanEnableCommand(enable: true, filterDuplicates: 0),
            ]
        }
        return [
            LESetScanParametersCommand(
                scanType: scanType, interval: intervalUnits, window: windowUnits, ownAddressType: ownAddressType),
            LESetScanEnableCommand(enable: true, filterDuplicates: false),
        ]
    }

    func disableCommand(extended: Bool) -> any HCICommand {
        extended ? LESetExtendedScanEnableCommand(enable: false) : LESetScanEnableCommand(enable: false)
    }
}
