import BLEHCI
import BLETransport
import Logging

/// What bring-up learned about the controller.
public struct ControllerInfo: Sendable, Hashable {
    public var address: BDAddress
    public var version: LocalVersionInformation
    public var features: LMPFeatures
    public var leFeatures: LEFeatures
    public var supportedCommands: SupportedCommands?
    public var aclBuffer: BufferSize?
    public var leBuffer: LEBufferSize?

    /// Extended scanning needs the LE Extended Advertising feature (LE features bit 12) and, where the controller
    /// lists its commands, LE Set Extended Scan Parameters among them.
    public var supportsExtendedScanning: Bool {
        leFeatures.contains(.extendedAdvertising) && (supportedCommands?.leSetExtendedScanParameters ?? true)
    }
}

/// Why bring-up stopped short of a usable LE controller.
public struct BringUpError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public static let leUnsupported = BringUpError(description: "the controller does not support Bluetooth LE (LMP features bit 38 clear)")
}

/// Brings a controller from power-on (or any state) to ready for LE scanning and connections:
/// Reset (Core v5.4 Vol 4 Part E §7.3.2), then what the host needs to know and the events it wants.
public enum ControllerBringUp {
    /// Events the host handles: disconnections, hardware errors, buffer overflow, and everything LE (§7.3.1).
    public static let eventMask: HCIEventMask = [.disconnectionComplete, .encryptionChange, .hardwareError,
                                                 .dataBufferOverflow, .encryptionKeyRefreshComplete, .leMeta]
    /// LE subevents the host handles (§7.8.1).
    public static let leEventMask: LEEventMask = [.connectionComplete, .advertisingReport, .connectionUpdateComplete,
                                                  .readRemoteFeaturesComplete, .dataLengthChange,
                                                  .enhancedConnectionComplete, .phyUpdateComplete,
                                                  .extendedAdvertisingReport, .scanTimeout]

    /// Runs the sequence; a failing command is logged with its name and the status's number and name, and thrown.
    public static func run(_ controller: HCIController, logger: Logger) async throws -> ControllerInfo {
        func step<C: HCICommand>(_ command: C) async throws -> C.Response {
            do {
                return try await controller.execute(command)
            } catch let e as HCIError {
                logger.error("bring-up: \(e)")
                throw e
            }
        }
        _ = try await step(ResetCommand())
        let version = try await step(ReadLocalVersionInformationCommand())
        // Read Local Supported Commands is mandatory since v1.2, but a failure only costs us a hint.
        let commands = try? await controller.execute(ReadLocalSupportedCommandsCommand())
        let features = try await step(ReadLocalSupportedFeaturesCommand())
        guard features.leSupported else {
            logger.error("bring-up: \(BringUpError.leUnsupported)")
            throw BringUpError.leUnsupported
        }
        _ = try await step(SetEventMaskCommand(eventMask))
        let leFeatures = try await step(LEReadLocalSupportedFeaturesCommand())
        let address = try await step(ReadBDADDRCommand())
        let acl = try? await controller.execute(ReadBufferSizeCommand())
        var leBuffer: LEBufferSize?
        if commands?.leReadBufferSizeV2 == true {
            leBuffer = try? await controller.execute(LEReadBufferSizeV2Command())
        }
        if leBuffer == nil { leBuffer = try? await controller.execute(LEReadBufferSizeCommand()) }
        _ = try await step(LESetEventMaskCommand(leEventMask))
        let info = ControllerInfo(address: address, version: version, features: features, leFeatures: leFeatures,
                                  supportedCommands: commands, aclBuffer: acl, leBuffer: leBuffer)
        let scanning = info.supportsExtendedScanning ? "extended" : "legacy"
        logger.info("controller \(address): HCI version \(version.hciVersion), manufacturer \(version.companyIdentifier), \(scanning) scanning")
        return info
    }
}
